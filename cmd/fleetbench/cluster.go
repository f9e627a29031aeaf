package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/devicesim"
)

// The cluster part (-cluster N): N fleetcam nodes on one PostgreSQL
// database and one NATS server in this process, a fleet spread over them
// (each device holding every node's address, moving to the next after a
// lost connection), a webhook receiver, and then kill -9 of the node that
// delivers webhooks.

// clusterRun is one run of the cluster part: the nodes, the fleet and
// what its callbacks recorded.
type clusterRun struct {
	nodes []*server
	apis  []*apiClient
	urls  []string // the nodes' MQTT URLs, in node order

	mu    sync.Mutex
	at    map[string]string    // imei → broker URL of its last connection
	since map[string]time.Time // imei → when that connection was set up
	acks  *ackLog
	sent  *sentEvents
}

func (c *clusterRun) connected(imei, url string) {
	c.mu.Lock()
	c.at[imei], c.since[imei] = url, time.Now()
	c.mu.Unlock()
}

func (c *clusterRun) acked(a devicesim.Ack) {
	c.acks.record(a)
	c.sent.ack(a)
}

// nodeOf is the index of the node imei is connected to, or -1.
func (c *clusterRun) nodeOf(imei string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Index(c.urls, c.at[imei])
}

// startNATS runs a NATS server in this process on a loopback port.
func startNATS() (*natsserver.Server, error) {
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		return nil, err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("the NATS server did not start within 10s")
	}
	return ns, nil
}

// cluster runs the cluster part.
func (b *bench) cluster(ctx context.Context) error {
	sc, n := b.sc, b.sc.clusterDevices
	fl, err := b.seeded(ctx, "cluster", n+sc.closedDevices)
	if err != nil {
		return err
	}
	defer b.dropStorage(ctx, fl.st)
	ns, err := startNATS()
	if err != nil {
		return err
	}
	defer ns.Shutdown()
	c := &clusterRun{at: map[string]string{}, since: map[string]time.Time{}, acks: &ackLog{w: discardWriter()},
		sent: &sentEvents{sent: map[eventKey]time.Time{}}}
	media := b.dir("cluster-media") // one directory every node shares
	for i := range b.o.cluster {
		id := "node-" + string(rune('a'+i))
		srv, err := startServer(ctx, serverOptions{bin: b.o.fleetcam, dataDir: b.dir("cluster-" + id), postgresURL: fl.st.pgURL, maxConns: b.sc.pgMaxConns,
			logPath: filepath.Join(b.work, "cluster-"+id+".log"), commitDelay: b.o.commitDelay,
			natsURL: ns.ClientURL(), nodeID: id, mediaDir: media, pprof: b.o.profile})
		if err != nil {
			return err
		}
		defer func() {
			if srv.running() {
				srv.stop()
			}
		}()
		api, err := newAPIClient(ctx, srv)
		if err != nil {
			return err
		}
		c.nodes, c.apis, c.urls = append(c.nodes, srv), append(c.apis, api), append(c.urls, srv.brokerURL())
	}
	rcv, err := startReceiver()
	if err != nil {
		return err
	}
	defer rcv.close()
	if err := subscribeReceiver(ctx, c.apis[0], fl.orgID, rcv); err != nil {
		return err
	}
	t := &table{title: fmt.Sprintf("8. Cluster: %d nodes on one PostgreSQL and NATS, %d devices spread over them, kill -9 of one node",
		b.o.cluster, n), cols: []string{"figure", "value", "note"}}

	// Connect: the whole fleet at once, GPS every 5 s, the events of the
	// webhook rate.
	storm := devicesim.LoadOptions{IMEIs: fl.imeis[:n], TokenSeed: benchTokenSeed,
		ConnectConcurrency: 256, KeepAlive: 300 * time.Second, GPSInterval: 5 * time.Second, PublishTimeout: 30 * time.Second,
		EventInterval: time.Duration(float64(n) / sc.clusterEventRate * float64(time.Second)), ReconnectDelay: 500 * time.Millisecond}
	oneNode, err := b.oneNodeConnect(ctx, storm)
	if err != nil {
		return err
	}
	m0, err := c.commitMetrics()
	if err != nil {
		return err
	}
	waits := sampleWaits(ctx, fl.st.pgURL)
	stats := b.o.profile && b.pg.stats && b.pg.resetStats(ctx) == nil
	if b.o.profile {
		// The storm takes seconds: each node's CPU over the first three.
		for i, srv := range c.nodes {
			go func() {
				path := filepath.Join(b.work, fmt.Sprintf("cluster-connect-node-%c.pprof", 'a'+i))
				if err := srv.profile(ctx, 3*time.Second, path); err != nil {
					fmt.Fprintf(b.log, "fleetbench: profile %s: %v\n", path, err)
				}
			}()
		}
	}
	var cpus []*cpuMeter
	for _, srv := range c.nodes {
		cpus = append(cpus, startCPU(srv.cmd.Process.Pid))
	}
	// This process (the devices, NATS, the receiver) and the PostgreSQL
	// server the bench started.
	here := startCPU(0).alsoTree(b.pg.pid())
	began := time.Now()
	clustered := storm
	clustered.BrokerURLs, clustered.OnConnect, clustered.OnAck = c.urls, c.connected, c.acked
	fr, err := startFleet(ctx, clustered)
	if err != nil {
		return err
	}
	defer fr.stop()
	if err := fr.waitConnected(ctx, n, 3*time.Minute, b.log); err != nil {
		return err
	}
	connectRate := float64(n) / time.Since(began).Seconds()
	waited := waits.summary()
	if stats {
		b.pg.writeStats(ctx, time.Since(began), filepath.Join(b.work, "cluster-connect-statements.txt"), b.log)
	}
	var nodeCores []string
	for _, m := range cpus {
		srv, _ := m.cores()
		nodeCores = append(nodeCores, fmt.Sprintf("%.2f", srv))
	}
	pgCores, pgMeasured := here.treeCores()
	_, localCores := here.cores()
	b.rep.figure("cluster", "connect_per_s", connectRate, "devices/s")
	t.add("connect", fmt.Sprintf("%s devices/s", num(connectRate)), "token auth, every node at once")
	b.rep.figure("cluster", "connect_one_bbolt_node_per_s", oneNode, "devices/s")
	b.rep.figure("cluster", "connect_vs_one_bbolt_node", connectRate/oneNode, "×")
	t.add("connect, one node on bbolt", fmt.Sprintf("%s devices/s (cluster %.2f×)", num(oneNode), connectRate/oneNode),
		"the same devices and load, one fleetcam on bbolt, earlier in this run")
	mc, err := c.commitMetrics()
	if err != nil {
		return err
	}
	if commits := mc.commits - m0.commits; commits > 0 {
		jobs, ms := (mc.jobs-m0.jobs)/commits, (mc.seconds-m0.seconds)/commits*1000
		b.rep.figure("cluster", "commit_jobs_while_connecting", jobs, "jobs")
		b.rep.figure("cluster", "commit_ms_while_connecting", ms, "ms")
		t.add("group commits while connecting", fmt.Sprintf("%.0f, %.1f jobs, %.1f ms", commits, jobs, ms),
			"every node's: count, jobs and mean time each")
	}
	cpuNote := fmt.Sprintf("fleetcam nodes %s, fleetbench (devices, NATS, receiver) %.2f", strings.Join(nodeCores, " + "), localCores)
	if pgMeasured {
		cpuNote += fmt.Sprintf(", PostgreSQL %.2f", pgCores)
	}
	t.add("CPU while connecting", cpuNote, "cores, from the processes' CPU times")
	if waited != "" {
		t.add("PostgreSQL's backends while connecting", waited, "mean backends running a statement (active), between statements of a transaction (idle in transaction) or waiting (type:event), from pg_stat_activity")
	}

	// Durable ingest, closed loop: devices of their own, spread too.
	if err := sleep(ctx, sc.warmup); err != nil {
		return err
	}
	w := newWindow(1)
	closed, err := startFleet(ctx, devicesim.LoadOptions{BrokerURLs: c.urls, IMEIs: fl.imeis[n:], TokenSeed: benchTokenSeed,
		KeepAlive: 300 * time.Second, ClosedLoop: true, PublishTimeout: 30 * time.Second, OnAck: w.ack})
	if err != nil {
		return err
	}
	if err := closed.waitConnected(ctx, sc.closedDevices, time.Minute, b.log); err != nil {
		closed.stop()
		return err
	}
	sleep(ctx, sc.warmup)
	windows, err := measure(ctx, w, b.o.runs, sc.window)
	closed.stop()
	if err != nil {
		return err
	}
	m := medianMeasured(windows)
	b.rep.figure("cluster", "closed_loop_msgs_per_s", m.rate(), "msgs/s")
	t.add("durable ingest, closed loop", fmt.Sprintf("%s msgs/s", num(m.rate())),
		fmt.Sprintf("%d devices, one QoS 1 GPS message each in flight; ack p99 %s", sc.closedDevices, msf(m.lat.p99)))

	// Commands across nodes, and publish → webhook while they run.
	c.sent.open.Store(true)
	lat, err := c.commands(ctx, fl.imeis[:sc.clusterCommands])
	if err != nil {
		return err
	}
	sleep(ctx, sc.webhookWindow)
	c.sent.open.Store(false)
	p := percentiles(lat)
	b.rep.figure("cluster", "command_p50", ms(p.p50), "ms")
	b.rep.figure("cluster", "command_p99", ms(p.p99), "ms")
	t.add("command round trip, p50 / p99", msf(p.p50)+" / "+msf(p.p99),
		fmt.Sprintf("%d commands, each through a node the device is not on", len(lat)))
	hook, err := c.webhookLatency(ctx, rcv, 30*time.Second)
	if err != nil {
		return err
	}
	b.rep.figure("cluster", "publish_to_webhook_p99", ms(hook.p99), "ms")
	t.add("publish → webhook, p50 / p99", msf(hook.p50)+" / "+msf(hook.p99), fmt.Sprintf("%s events/s fleet-wide", num(sc.clusterEventRate)))

	// Failover: kill -9 of the node delivering webhooks.
	victim := -1
	for i, srv := range c.nodes {
		if srv.took("webhooks") {
			victim = i
		}
	}
	if victim < 0 {
		return fmt.Errorf("no node logged taking webhook delivery")
	}
	var moved []string
	for _, imei := range fl.imeis[:n] {
		if c.nodeOf(imei) == victim {
			moved = append(moved, imei)
		}
	}
	// The victim's counts of conflicts end with it: read them first.
	before, err := c.nodes[victim].metrics()
	if err != nil {
		return fmt.Errorf("metrics of %s: %w", c.nodes[victim].nodeID, err)
	}
	conflicts := conflictCounts(before)
	killed := time.Now()
	c.nodes[victim].kill()
	fmt.Fprintf(b.log, "    killed %s with %d devices and webhook delivery\n", c.nodes[victim].nodeID, len(moved))
	// Each moved device is tried from the moment it reconnects, beside
	// the wait for the others.
	type result struct {
		at  time.Duration
		err error
	}
	served := make(chan result, 1)
	go func() {
		at, err := c.serving(ctx, moved, victim, killed, 2*time.Minute)
		served <- result{at, err}
	}()
	reconnected, err := c.waitMoved(ctx, moved, victim, killed, 2*time.Minute)
	if err != nil {
		return err
	}
	sv := <-served
	if sv.err != nil {
		return sv.err
	}
	serving := sv.at
	if err := sleep(ctx, sc.webhookWindow); err != nil {
		return err
	}
	fr.stop()
	b.rep.figure("cluster", "failover_reconnected_s", reconnected.Seconds(), "s")
	b.rep.figure("cluster", "failover_serving_s", serving.Seconds(), "s")
	t.add("failover: every moved device reconnected", fmt.Sprintf("%.2f s", reconnected.Seconds()),
		fmt.Sprintf("%d devices of %s, to the next address in their list", len(moved), c.nodes[victim].nodeID))
	t.add("failover: every moved device serving", fmt.Sprintf("%.2f s", serving.Seconds()),
		"a command through a node the device is not on answered by the device")

	// What was acknowledged is stored; every delivery arrives.
	for i, srv := range c.nodes {
		if i != victim {
			if _, err := srv.settle(ctx, 2*time.Minute); err != nil {
				return err
			}
		}
	}
	lost, gps, events, err := verifyAcks(ctx, fl.st, c.acks.acks)
	if err != nil {
		return err
	}
	b.rep.figure("cluster", "acked_lost", float64(lost), "messages")
	t.add("acknowledged messages lost", fmt.Sprintf("%d of %d", lost, gps+events), fmt.Sprintf("%d GPS, %d events acknowledged in the whole run", gps, events))
	drained, err := webhooksDrained(ctx, fl.st.pgURL, 2*time.Minute)
	if err != nil {
		return err
	}
	hookLost := 0
	for _, a := range c.acks.acks {
		if a.Topic == protocol.TopicEvent {
			if _, ok := rcv.arrivedAt(eventKeyOf(a)); !ok {
				hookLost++
			}
		}
	}
	for i, srv := range c.nodes {
		if i == victim {
			continue
		}
		m, err := srv.metrics()
		if err != nil {
			return fmt.Errorf("metrics of %s: %w", srv.nodeID, err)
		}
		conflicts = conflicts.add(conflictCounts(m))
	}
	b.rep.figure("cluster", "conflicts_retried", conflicts.retried, "messages")
	b.rep.figure("cluster", "conflicts_expired", conflicts.expired, "messages")
	b.rep.figure("cluster", "store_errors", conflicts.storeErrors, "messages")
	bad, dupes, _ := rcv.counts()
	mixed := rcv.mixedIDs()
	b.rep.figure("cluster", "webhook_lost", float64(hookLost), "events")
	b.rep.figure("cluster", "webhook_duplicates", float64(dupes), "deliveries")
	t.add("webhook messages lost", fmt.Sprintf("%d of %d", hookLost, events), fmt.Sprintf("outbox drained: %v", drained))
	t.add("webhook duplicates", strconv.Itoa(dupes), fmt.Sprintf("under another webhook-id: %d; bad signatures: %d", mixed, bad))
	t.add("devices disconnected by commit conflicts", fmt.Sprintf("%.0f", conflicts.expired),
		fmt.Sprintf("messages committed again after a conflict: %.0f; messages not stored for any store error: %.0f (every node, the killed one until the kill)",
			conflicts.retried, conflicts.storeErrors))
	t.note("%d shared cores for PostgreSQL, NATS, %d fleetcam processes, the devices and the receiver", runtime.NumCPU(), b.o.cluster)
	t.note("job lock retry 1s: another node takes webhook delivery within about a second of the kill")
	b.rep.table(t)
	if hookLost > 0 || lost > 0 || mixed > 0 || bad > 0 || !drained {
		return fmt.Errorf("%d acknowledged messages lost, %d webhook messages lost, %d redelivered under another id, %d bad signatures, outbox drained %v",
			lost, hookLost, mixed, bad, drained)
	}
	return nil
}

// commitConflicts are a node's counts of device messages whose commit lost
// a transaction conflict (fleetcam_store_commit_conflicts_total) and of
// messages not stored for a store error, which disconnects the device.
type commitConflicts struct{ retried, expired, storeErrors float64 }

// conflictCounts reads commitConflicts from a node's metrics.
func conflictCounts(m map[string]float64) commitConflicts {
	return commitConflicts{
		retried:     metricSum(m, "fleetcam_store_commit_conflicts_total", `result="retried"`),
		expired:     metricSum(m, "fleetcam_store_commit_conflicts_total", `result="expired"`),
		storeErrors: metricSum(m, "fleetcam_mqtt_ingest_messages_total", `result="store_error"`),
	}
}

func (c commitConflicts) add(o commitConflicts) commitConflicts {
	return commitConflicts{c.retried + o.retried, c.expired + o.expired, c.storeErrors + o.storeErrors}
}

// command sends one command to imei through a node it is not on, other
// than skip, and reports whether the device answered it. Load devices
// answer every command "ok false" with a reason of their own, which the
// 417 carries.
func (c *clusterRun) command(ctx context.Context, imei string, skip int) (bool, error) {
	on := c.nodeOf(imei)
	through := -1
	for i := range c.apis {
		if i != on && i != skip {
			through = i
			break
		}
	}
	if through < 0 {
		return false, fmt.Errorf("no node other than the device's")
	}
	var out struct {
		Message string `json:"message"`
	}
	status, err := c.apis[through].call(ctx, http.MethodGet, "/v2/devices/"+imei+"/recording-ranges", nil, &out)
	if err != nil {
		return false, err
	}
	return status == http.StatusExpectationFailed && strings.Contains(out.Message, "commands are not simulated in load mode"), nil
}

// commands times one command to each of imeis, each through a node the
// device is not on.
func (c *clusterRun) commands(ctx context.Context, imeis []string) ([]time.Duration, error) {
	var lat []time.Duration
	for _, imei := range imeis {
		began := time.Now()
		ok, err := c.command(ctx, imei, -1)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("device %s did not answer a command through another node", imei)
		}
		lat = append(lat, time.Since(began))
	}
	return lat, nil
}

// webhookLatency waits up to wait for the events acknowledged while sent
// was open to arrive at rcv and returns publish → arrival percentiles.
func (c *clusterRun) webhookLatency(ctx context.Context, rcv *receiver, wait time.Duration) (latency, error) {
	c.sent.mu.Lock()
	keys := maps.Clone(c.sent.sent)
	c.sent.mu.Unlock()
	deadline := time.Now().Add(wait)
	for {
		var lat []time.Duration
		for k, at := range keys {
			if got, ok := rcv.arrivedAt(k); ok {
				lat = append(lat, got.Sub(at))
			}
		}
		if len(lat) == len(keys) {
			return percentiles(lat), nil
		}
		if time.Now().After(deadline) {
			return latency{}, fmt.Errorf("%d of %d events acknowledged arrived at the webhook receiver within %s", len(lat), len(keys), wait)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return latency{}, err
		}
	}
}

// waitMoved waits until every device of moved has connected to a node
// other than victim after killed, and returns how long after the kill the
// last did.
func (c *clusterRun) waitMoved(ctx context.Context, moved []string, victim int, killed time.Time, limit time.Duration) (time.Duration, error) {
	for {
		var last time.Time
		left := 0
		c.mu.Lock()
		for _, imei := range moved {
			if c.at[imei] == c.urls[victim] || c.since[imei].Before(killed) {
				left++
			} else if c.since[imei].After(last) {
				last = c.since[imei]
			}
		}
		c.mu.Unlock()
		if left == 0 {
			return last.Sub(killed), nil
		}
		if time.Since(killed) > limit {
			return 0, fmt.Errorf("%d of %d devices of the killed node not reconnected after %s", left, len(moved), limit)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// moved reports whether imei's last connection is a new one, set up
// after killed on a node other than victim.
func (c *clusterRun) moved(imei string, victim int, killed time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at[imei] != c.urls[victim] && !c.since[imei].Before(killed)
}

// servingProbes bounds the commands the failover measurement has in
// flight at once, so that its own requests do not load the nodes.
const servingProbes = 64

// serving measures when each device of moved serves again: from the
// moment it has reconnected, a command through a node it is not on, again
// until it answers. It returns how long after the kill the last answered.
// Every device is probed on its own, so the figure is when the last
// device could be reached, not how long a few workers took to go through
// them all.
func (c *clusterRun) serving(ctx context.Context, moved []string, victim int, killed time.Time, limit time.Duration) (time.Duration, error) {
	slots := make(chan struct{}, servingProbes)
	errs := make(chan error, 1)
	var mu sync.Mutex
	var last time.Time
	var wg sync.WaitGroup
	for _, imei := range moved {
		wg.Go(func() {
			for {
				if c.moved(imei, victim, killed) {
					slots <- struct{}{}
					ok, err := c.command(ctx, imei, victim)
					<-slots
					if ok {
						mu.Lock()
						if now := time.Now(); now.After(last) {
							last = now
						}
						mu.Unlock()
						return
					}
					if err != nil {
						select {
						case errs <- err:
						default:
						}
						return
					}
				}
				if time.Since(killed) > limit {
					select {
					case errs <- fmt.Errorf("device %s not serving %s after the kill", imei, limit):
					default:
					}
					return
				}
				if sleep(ctx, 20*time.Millisecond) != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return last.Sub(killed), nil
}

// webhooksDrained waits up to limit until the outbox is fanned out and no
// delivery is pending.
func webhooksDrained(ctx context.Context, url string, limit time.Duration) (bool, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return false, err
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(limit)
	for {
		var cursor, last, pending int64
		err := conn.QueryRow(ctx, `SELECT (SELECT cursor_seq FROM webhook_outbox),
			(SELECT coalesce(max(seq), 0) FROM messages),
			(SELECT count(*) FROM webhook_deliveries WHERE status <> 'delivered')`).Scan(&cursor, &last, &pending)
		if err != nil {
			return false, err
		}
		if cursor >= last && pending == 0 {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return false, err
		}
	}
}

// discardWriter is an ack log's file when the acks are kept in memory only.
func discardWriter() *bufio.Writer { return bufio.NewWriter(io.Discard) }

// commitCounts are the group commits of every node of a cluster: how
// many, their jobs and their seconds, as the nodes' metrics count them.
type commitCounts struct{ commits, jobs, seconds float64 }

// commitMetrics reads the group commits of every node.
func (c *clusterRun) commitMetrics() (commitCounts, error) {
	var cc commitCounts
	for _, srv := range c.nodes {
		m, err := srv.metrics()
		if err != nil {
			return cc, fmt.Errorf("metrics of %s: %w", srv.nodeID, err)
		}
		cc.commits += metricSum(m, "fleetcam_store_commit_seconds_count")
		cc.jobs += metricSum(m, "fleetcam_store_commit_batch_jobs_sum")
		cc.seconds += metricSum(m, "fleetcam_store_commit_seconds_sum")
	}
	return cc, nil
}

// oneNodeConnect connects the devices of storm, with its load, to one
// fleetcam on bbolt, and returns the devices connected per second: what
// the cluster's connect rate is compared with, on the same machine in the
// same run and with the same fleet (a storm of a thousand devices pays
// more of its start-up per device than the hold part's ten thousand).
func (b *bench) oneNodeConnect(ctx context.Context, storm devicesim.LoadOptions) (float64, error) {
	engine := b.engine
	b.engine = engineBolt
	fl, err := b.seeded(ctx, "cluster-one-node", len(storm.IMEIs))
	b.engine = engine
	if err != nil {
		return 0, err
	}
	srv, err := b.startWith(ctx, fl.st, false)
	if err != nil {
		return 0, err
	}
	defer srv.stop()
	storm.BrokerURLs = []string{srv.brokerURL()}
	began := time.Now()
	fr, err := startFleet(ctx, storm)
	if err != nil {
		return 0, err
	}
	defer fr.stop()
	if err := fr.waitConnected(ctx, len(storm.IMEIs), 3*time.Minute, b.log); err != nil {
		return 0, err
	}
	return float64(len(storm.IMEIs)) / time.Since(began).Seconds(), nil
}
