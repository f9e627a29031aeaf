package main

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/internal/pgserver"
)

// After an outage of PostgreSQL or NATS, or a node killed while
// PostgreSQL is away, the presence the cluster shows is what the
// connections are: shown with real node processes (cluster_proc_test.go)
// over a PostgreSQL server of the test's own, which it stops and starts.

// outageWait bounds the waits of the outage tests: a device refused while
// PostgreSQL is away waits up to 30 s between attempts
// (docs/device-protocol.md, section 4), and the nodes run under the race
// detector on a machine that may be busy with other work.
const outageWait = 5 * time.Minute

// lockRetries are the nodes' cluster.jobLockRetry in the outage tests:
// node-b takes its locks again well after the others, so that when
// PostgreSQL is back, the node that takes the dead-nodes job first finds
// node-b, alive, without its life lock, as any node may be found for up
// to its retry. Three seconds of that window are enough for the first
// node's sweep: one judging by the lock alone marks node-b's devices
// offline in it. pgOutages is how often PostgreSQL goes away in the first.
var lockRetries = []time.Duration{time.Second, 4 * time.Second, time.Second}

const pgOutages = 3

// until checks cond every 100 ms until it holds, for up to d; cond says
// what is still missing, which the failure names.
func until(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", d, what, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// presenceTrue reports whether the presence the cluster shows is what the
// connections are: the live nodes together hold exactly the devices of
// want (GET /v2/cluster through each), every one of them reads online
// through every live node, and every other device of the organization
// reads offline. Else it says what differs.
func (pc *procCluster) presenceTrue(live []*procNode, want []string) (bool, string) {
	for _, pn := range live {
		status, out := pn.api.call("GET", "/v2/cluster", pc.tok, nil)
		if status != http.StatusOK {
			return false, fmt.Sprintf("GET /v2/cluster through %s: %d %v", pn.id, status, out)
		}
		held := map[string]int{}
		total := 0
		list, _ := dig(out, "data", "nodes").([]any)
		for _, n := range list {
			n := n.(map[string]any)
			held[n["nodeId"].(string)] = int(n["devices"].(float64))
			total += int(n["devices"].(float64))
		}
		if len(held) != len(live) || total != len(want) {
			return false, fmt.Sprintf("GET /v2/cluster through %s: %v; want %d nodes holding %d devices", pn.id, held, len(live), len(want))
		}
	}
	for _, pn := range live {
		status, out := pn.api.call("GET", pc.org+"/devices?limit=1500", pc.tok, nil)
		if status != http.StatusOK {
			return false, fmt.Sprintf("list devices through %s: %d %v", pn.id, status, out)
		}
		shown := map[string]string{}
		list, _ := out["data"].([]any)
		for _, d := range list {
			d := d.(map[string]any)
			shown[d["imei"].(string)] = d["status"].(string)
		}
		var wrong []string
		for imei, s := range shown {
			if online := slices.Contains(want, imei); online != (s == "online") {
				wrong = append(wrong, imei+" "+s)
			}
		}
		if len(wrong) > 0 {
			slices.Sort(wrong)
			return false, fmt.Sprintf("through %s %d devices read wrong, e.g. %v (of %d connected)", pn.id, len(wrong), wrong[:min(3, len(wrong))], len(want))
		}
	}
	return true, ""
}

// TestClusterPresenceAfterOutages: three node processes hold a fleet of
// publishing and idle devices. After each of these faults, once the
// devices are connected again, every connected device reads online
// through every node, the other devices read offline and GET /v2/cluster
// counts exactly the connections, no acknowledged message is lost, and no
// node disconnected a device over commit conflicts:
//
//   - PostgreSQL stopped until every node lost its life lock, then
//     started again: no node may take another for dead in the window
//     before that node takes its lock again, and a node that marked
//     nothing must still hold its devices online;
//   - NATS stopped while the devices publish, then started again;
//   - PostgreSQL stopped, a node killed meanwhile, PostgreSQL started:
//     the dead node's devices that reconnected elsewhere read online,
//     and its device that did not reconnect reads offline.
//
// The subtests run in order on one cluster.
func TestClusterPresenceAfterOutages(t *testing.T) {
	t.Parallel()
	const busy, idle = 18, 6
	ctx := t.Context()
	srv, err := pgserver.Start(ctx, pgserver.Options{Parent: pgserver.MemoryDir(), Settings: map[string]string{"max_pred_locks_per_transaction": "1024"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	if err := srv.Exec(ctx, "postgres", "CREATE DATABASE fleetcam"); err != nil {
		t.Fatal(err)
	}
	pc := startProcClusterOn(t, srv.URL("fleetcam"), lockRetries, procSetup{media: sharedMediaDir(t.TempDir())})
	imeis := testIMEIs(t, "35693810300000", busy+idle+1)
	lone, imeis := imeis[busy+idle], imeis[:busy+idle]
	pc.addDevices(append(slices.Clone(imeis), lone))
	var urls []string
	for _, pn := range pc.nodes {
		urls = append(urls, pn.brokerURL())
	}
	master := factoryMasterKey(t)
	log := newFleetLog()
	runFleet(t, log.options(devicesim.LoadOptions{BrokerURLs: urls, IMEIs: imeis[:busy], FactoryMasterKey: master,
		GPSInterval: time.Second, EventInterval: 5 * time.Second, ReconnectDelay: 200 * time.Millisecond}))
	runFleet(t, log.options(devicesim.LoadOptions{BrokerURLs: urls, IMEIs: imeis[busy:], FactoryMasterKey: master,
		ReconnectDelay: 200 * time.Millisecond}))
	live := slices.Clone(pc.nodes)
	until(t, outageWait, "every device connected and shown online", func() (bool, string) { return pc.presenceTrue(live, imeis) })

	// What each node logged of its life lock.
	lifeLost := func(pn *procNode) int { return pn.lostLock(lifeLock(pn.id)) }
	lifeTaken := func(pn *procNode) int { return pn.took(lifeLock(pn.id)) }

	t.Run("postgres outage", func(t *testing.T) {
		for round := range pgOutages {
			lost, taken := map[string]int{}, map[string]int{}
			for _, pn := range live {
				lost[pn.id], taken[pn.id] = lifeLost(pn), lifeTaken(pn)
			}
			acked := len(log.snapshot())
			if err := srv.Pause(); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()
			until(t, outageWait, "every node to lose its life lock", func() (bool, string) {
				for _, pn := range live {
					if lifeLost(pn) == lost[pn.id] {
						return false, pn.id + " holds its life lock"
					}
				}
				return true, ""
			})
			if err := srv.Resume(ctx); err != nil {
				t.Fatal(err)
			}
			back := time.Now()
			until(t, outageWait, "every node to take its life lock again", func() (bool, string) {
				for _, pn := range live {
					if lifeTaken(pn) == taken[pn.id] {
						return false, pn.id + " has not taken its life lock again"
					}
				}
				return true, ""
			})
			until(t, outageWait, "every device connected again and shown online", func() (bool, string) { return pc.presenceTrue(live, imeis) })
			t.Logf("round %d: PostgreSQL away for %s; every device connected and shown online %s after it was back (cluster.jobLockRetry %v)",
				round+1, back.Sub(stopped).Round(time.Millisecond), time.Since(back).Round(time.Millisecond), lockRetries)
			until(t, outageWait, "messages acknowledged after the outage", func() (bool, string) {
				n := len(log.snapshot())
				return n > acked+busy, fmt.Sprintf("%d acknowledged since", n-acked)
			})
		}
		checkNoLostAcks(t, pc, live, log)
	})

	t.Run("nats outage", func(t *testing.T) {
		pc.nats.Stop()
		acked := len(log.snapshot())
		until(t, outageWait, "messages acknowledged while NATS is down", func() (bool, string) {
			n := len(log.snapshot())
			return n > acked+busy, fmt.Sprintf("%d acknowledged since", n-acked)
		})
		pc.nats.Restart()
		until(t, outageWait, "every device shown online once NATS is back", func() (bool, string) { return pc.presenceTrue(live, imeis) })
		checkNoLostAcks(t, pc, live, log)
	})

	t.Run("node killed while postgres is away", func(t *testing.T) {
		victim := live[2]
		dev, stopLone := simulateAt(t, victim.brokerURL(), lone, master, stateDir(t), nil)
		until(t, outageWait, "the lone device connected to "+victim.id, func() (bool, string) {
			return dev.Connected(), "not connected"
		})
		until(t, outageWait, "every device shown online", func() (bool, string) {
			return pc.presenceTrue(live, append(slices.Clone(imeis), lone))
		})
		lost := map[string]int{}
		for _, pn := range live {
			lost[pn.id] = lifeLost(pn)
		}
		if err := srv.Pause(); err != nil {
			t.Fatal(err)
		}
		until(t, outageWait, "every node to lose its life lock", func() (bool, string) {
			for _, pn := range live {
				if lifeLost(pn) == lost[pn.id] {
					return false, pn.id + " holds its life lock"
				}
			}
			return true, ""
		})
		victim.kill()
		stopLone() // it does not come back: the store must not show it online
		live = live[:2]
		if err := srv.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		until(t, outageWait, "the killed node's devices connected elsewhere and every device shown as it is", func() (bool, string) {
			return pc.presenceTrue(live, imeis)
		})
		checkNoLostAcks(t, pc, live, log)
	})
}

// snapshot copies the acknowledged messages recorded so far.
func (l *fleetLog) snapshot() []devicesim.Ack {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.acks)
}

// checkNoLostAcks fails the test if the store lacks an acknowledged
// message, or a node of live disconnected a device because its message
// lost commit conflicts for as long as it could wait, and logs how many
// messages there were.
func checkNoLostAcks(t *testing.T, pc *procCluster, live []*procNode, log *fleetLog) {
	t.Helper()
	for _, pn := range live {
		if n := conflictsExpired(t, pn); n != 0 {
			t.Errorf("%s disconnected devices %v times over commit conflicts (fleetcam_store_commit_conflicts_total{result=\"expired\"})", pn.id, n)
		}
	}
	acks := log.snapshot()
	if lost := lostAcks(t, pc.pg, acks); len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged messages are not in the store, e.g. %+v", len(lost), len(acks), lost[0])
	}
	events := 0
	for _, a := range acks {
		if a.Topic == protocol.TopicEvent {
			events++
		}
	}
	t.Logf("%d messages acknowledged (%d events), all stored", len(acks), events)
}

// expiredConflicts is the sample of the devices a node disconnected over
// commit conflicts (labelled with the node in a cluster).
var expiredConflicts = regexp.MustCompile(`(?m)^fleetcam_store_commit_conflicts_total\{[^}]*result="expired"[^}]*\} (\S+)$`)

// conflictsExpired reads from pn's /metrics how many device messages it
// gave up committing through conflicts.
func conflictsExpired(t *testing.T, pn *procNode) float64 {
	t.Helper()
	status, body := scrape(t, strings.TrimPrefix(pn.c.base, "http://"))
	m := expiredConflicts.FindStringSubmatch(body)
	if status != http.StatusOK || m == nil {
		t.Fatalf("%s's /metrics has no fleetcam_store_commit_conflicts_total{result=\"expired\"}", pn.id)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
