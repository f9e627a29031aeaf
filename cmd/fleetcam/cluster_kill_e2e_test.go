package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// Kill -9 of a real node process of a three-node cluster
// (cluster_proc_test.go), under load and in the middle of a webhook
// delivery.

// killFleet is the fleet of TestClusterKillNodeUnderLoad, a third on each
// node: enough for every node to hold devices that publish, take
// commands and move while webhooks are delivered, which is all the test
// checks; the failover of a thousand devices, and how fast it is, is
// measured by make bench-cluster (fleetbench -cluster 3), without the
// race detector.
const killFleet = 120

// fleetLog is what a load fleet's callbacks recorded.
type fleetLog struct {
	mu       sync.Mutex
	at       map[string]string    // imei → broker URL of its last connection
	since    map[string]time.Time // imei → when its last connection was set up
	acks     []devicesim.Ack      // acknowledged GPS messages and events
	commands map[string]int       // imei → commands received
}

func newFleetLog() *fleetLog {
	return &fleetLog{at: map[string]string{}, since: map[string]time.Time{}, commands: map[string]int{}}
}

func (l *fleetLog) connected(imei, url string) {
	l.mu.Lock()
	l.at[imei], l.since[imei] = url, time.Now()
	l.mu.Unlock()
}

func (l *fleetLog) acked(a devicesim.Ack) {
	if a.Topic != protocol.TopicGPS && a.Topic != protocol.TopicEvent {
		return
	}
	l.mu.Lock()
	l.acks = append(l.acks, a)
	l.mu.Unlock()
}

func (l *fleetLog) received(imei, suffix string, _ []byte) {
	if suffix == protocol.TopicCommand {
		l.mu.Lock()
		l.commands[imei]++
		l.mu.Unlock()
	}
}

// count counts the acknowledged messages of topic.
func (l *fleetLog) count(topic string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range l.acks {
		if a.Topic == topic {
			n++
		}
	}
	return n
}

// options are load options that record into l.
func (l *fleetLog) options(o devicesim.LoadOptions) devicesim.LoadOptions {
	o.OnConnect, o.OnAck, o.OnReceive = l.connected, l.acked, l.received
	return o
}

// runFleet runs a load fleet until the returned stop is called (or the
// test ends).
func runFleet(t *testing.T, o devicesim.LoadOptions) (stop func()) {
	t.Helper()
	f, err := devicesim.NewLoadFleet(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return stop
}

// within checks cond until it holds, for up to d.
func within(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	storetest.Eventually(t, what, d, 50*time.Millisecond, cond)
}

// TestClusterKillNodeUnderLoad: killFleet devices spread over three nodes
// publish GPS and events at QoS 1 with a webhook receiver subscribed; the
// node delivering webhooks is killed with SIGKILL. Every device of the
// killed node reconnects to the next node in its list and serves a
// command made through a node it is not on; every acknowledged message is
// in the store; a privacy switch and a configuration change made while a
// device of the killed node was away reach it when it comes back; another
// node takes webhook delivery and every stored delivery arrives, a
// message repeated only under its own webhook-id.
func TestClusterKillNodeUnderLoad(t *testing.T) {
	t.Parallel()
	pc := startProcCluster(t, 3)
	rcv := startHookReceiver(t)
	rcv.subscribe(pc, pc.nodes[0])
	imeis := testIMEIs(t, "35693810100000", killFleet+1)
	away, imeis := imeis[killFleet], imeis[:killFleet]
	pc.addDevices(append(slices.Clone(imeis), away))

	victim := pc.dispatcher()
	var urls []string
	for _, pn := range pc.nodes {
		urls = append(urls, pn.brokerURL())
	}
	master := factoryMasterKey(t)
	log := newFleetLog()
	stopFleet := runFleet(t, log.options(devicesim.LoadOptions{BrokerURLs: urls, IMEIs: imeis, FactoryMasterKey: master,
		ConnectRate: 250, GPSInterval: 5 * time.Second, EventInterval: 20 * time.Second, ReconnectDelay: 500 * time.Millisecond}))
	// The device that is away while its privacy and configuration change.
	awayDir := stateDir(t)
	dev, stopAway := simulateAt(t, victim.brokerURL(), away, master, awayDir, nil)

	within(t, patience, "every device connected", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.at) == killFleet && dev.Connected()
	})
	within(t, patience, "events acknowledged and webhooks delivered before the kill", func() bool {
		rcv.mu.Lock()
		answered := len(rcv.answered)
		rcv.mu.Unlock()
		return log.count(protocol.TopicEvent) >= 50 && answered >= 10
	})

	log.mu.Lock()
	var moved []string // the killed node's devices
	for imei, url := range log.at {
		if url == victim.brokerURL() {
			moved = append(moved, imei)
		}
	}
	log.mu.Unlock()
	killed := time.Now()
	victim.kill()
	t.Logf("killed %s, which held %d devices and webhook delivery", victim.id, len(moved))
	stopAway()

	// Changed while the device is connected nowhere: queued in the store.
	var live []*procNode
	for _, pn := range pc.nodes {
		if pn != victim {
			live = append(live, pn)
		}
	}
	status, out := live[0].api.call("POST", "/v2/devices/privacy-control", pc.tok, map[string]any{"imeis": []string{away}, "privacyMode": "on"})
	if accepted, _ := dig(out, "data", "accepted").([]any); status != http.StatusOK || len(accepted) != 1 {
		t.Fatalf("privacy switch while the device is away: %d %v", status, out)
	}
	if status, out := live[1].api.call("PUT", "/v2/devices/"+away+"/device-config", pc.tok, map[string]any{"brightness": map[string]any{"value": 66}}); status != http.StatusOK {
		t.Fatalf("device config while the device is away: %d %v", status, out)
	}

	within(t, patience, "every device of the killed node reconnected to another node", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		for _, imei := range moved {
			if log.at[imei] == victim.brokerURL() || log.since[imei].Before(killed) {
				return false
			}
		}
		return true
	})
	t.Logf("the killed node's %d devices reconnected within %s", len(moved), time.Since(killed).Round(time.Millisecond))

	// The away device comes back to the next node in its list.
	dev, _ = simulateAt(t, live[0].brokerURL(), away, master, awayDir, nil)
	within(t, patience, "the queued privacy switch and the changed configuration at the device", func() bool {
		cfg := dev.AppliedConfig()
		return dev.PrivacyMode() == "on" && cfg != nil && cfg.Device.Brightness == 66
	})

	// Every moved device serves a command made through a node it is not on.
	byURL := map[string]*procNode{}
	for _, pn := range live {
		byURL[pn.brokerURL()] = pn
	}
	// A device whose message the store could not commit (a serialisation
	// conflict that outlasted the retries) is disconnected unanswered and
	// comes back, and one refused again meanwhile waits longer each time,
	// up to 30 s (docs/device-protocol.md, section 4): each device has two
	// of those waits and some to answer.
	for _, imei := range moved {
		var last string
		answered := func() bool {
			log.mu.Lock()
			on := byURL[log.at[imei]]
			before := log.commands[imei]
			log.mu.Unlock()
			through := live[0]
			if on == through {
				through = live[1]
			}
			status, out := through.api.call("GET", "/v2/devices/"+imei+"/recording-ranges", pc.tok, nil)
			log.mu.Lock()
			after := log.commands[imei]
			log.mu.Unlock()
			// Load devices answer every command "ok false" with a reason
			// of their own, which the 417 carries: the device answered.
			msg, _ := out["message"].(string)
			last = fmt.Sprintf("%d %s; %d commands received", status, msg, after-before)
			return status == http.StatusExpectationFailed && strings.Contains(msg, "commands are not simulated in load mode") && after > before
		}
		for deadline := time.Now().Add(patience); !answered(); {
			if time.Now().After(deadline) {
				t.Fatalf("device %s did not answer a command through a node it is not on within %v: %s", imei, patience, last)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Ingest goes on after the failover; then the fleet stops.
	events := log.count(protocol.TopicEvent)
	within(t, patience, "more events acknowledged after the failover", func() bool {
		return log.count(protocol.TopicEvent) >= events+20
	})
	stopFleet()

	lost := lostAcks(t, pc.pg, log.acks)
	if len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged messages are not in the store, e.g. %+v", len(lost), len(log.acks), lost[0])
	}
	checkWebhooks(t, pc, rcv, log.acks, patience)
	if n := victim.took("webhooks"); n != 1 {
		t.Fatalf("the killed node took webhook delivery %d times", n)
	}
	if live[0].took("webhooks")+live[1].took("webhooks") == 0 {
		t.Fatal("no live node took webhook delivery after the kill")
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	t.Logf("%d messages acknowledged (%d events), all stored; %d webhook requests for %d deliveries",
		len(log.acks), log.count(protocol.TopicEvent), rcv.requests, len(rcv.answered))
}

// simulateAt runs a simulated dashcam of imei against brokerURL, keeping
// its token in dir, until stop or the end of the test; tune, when given,
// adjusts its options.
func simulateAt(t *testing.T, brokerURL, imei string, master []byte, dir string, tune func(*devicesim.Options)) (*devicesim.Device, func()) {
	t.Helper()
	o := devicesim.Options{IMEI: imei, BrokerURL: brokerURL, FactoryMasterKey: master, StateDir: dir}
	if tune != nil {
		tune(&o)
	}
	dev, err := devicesim.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); dev.Run(ctx) }()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return dev, stop
}

// lostAcks returns the acknowledged messages the store lacks: a GPS
// message by its fix's millisecond, an event by the device's event id.
func lostAcks(t *testing.T, url string, acks []devicesim.Ack) []devicesim.Ack {
	t.Helper()
	stored := map[string]bool{}
	for _, q := range []string{
		`SELECT imei || ' ` + protocol.TopicEvent + ` ' || device_event_id FROM events WHERE device_event_id IS NOT NULL`,
		`SELECT imei || ' ` + protocol.TopicGPS + ` ' || (extract(epoch FROM sampled_at) * 1000)::bigint FROM gps_samples`,
	} {
		keys, err := pgStrings(t, url, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			stored[k] = true
		}
	}
	var lost []devicesim.Ack
	for _, a := range acks {
		if !stored[a.IMEI+" "+a.Topic+" "+a.Key] {
			lost = append(lost, a)
		}
	}
	return lost
}

// checkWebhooks waits, up to d, until every delivery the store holds was
// answered by rcv, and checks that every acknowledged event was among
// them, that every delivery was signed, that a message that came again
// came under its own webhook-id and that each device's events were
// answered in the order they were stored.
func checkWebhooks(t *testing.T, pc *procCluster, rcv *hookReceiver, acks []devicesim.Ack, d time.Duration) {
	t.Helper()
	var missing []string
	until(t, d, "every stored webhook delivery answered by the receiver", func() (bool, string) {
		var done bool
		var why string
		done, missing, why = rcv.deliveredAll(pc)
		return done, why
	})
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(missing) > 0 {
		t.Fatalf("%d deliveries never arrived, e.g. %s", len(missing), missing[0])
	}
	for _, a := range acks {
		if a.Topic != protocol.TopicEvent {
			continue
		}
		msec, _ := strconv.ParseInt(strings.TrimPrefix(a.Key, "L"), 10, 64)
		if !rcv.events[a.IMEI+" "+strconv.FormatInt(msec/1000, 10)] {
			t.Fatalf("acknowledged event %s of %s never arrived at the webhook receiver", a.Key, a.IMEI)
		}
	}
	if rcv.bad != 0 || rcv.mixed != 0 {
		t.Fatalf("%d deliveries failed verification, %d messages came again under another webhook-id", rcv.bad, rcv.mixed)
	}
	for imei, ids := range rcv.order {
		if !slices.IsSorted(ids) {
			t.Fatalf("events of %s answered in the order %v; want the order they were stored", imei, ids)
		}
	}
}

// TestClusterWebhookNodeDiesMidDelivery: the receiver keeps the
// deliveries of the node that delivers webhooks open; that node is killed
// with SIGKILL. Another node takes webhook delivery and delivers again
// what the dead node had in flight, under the same webhook-id, each
// device's events in the order they were stored, and nothing is lost.
func TestClusterWebhookNodeDiesMidDelivery(t *testing.T) {
	t.Parallel()
	const (
		devices  = 12
		answered = 3 // requests answered before the kill; later ones are held
	)
	pc := startProcCluster(t, 3)
	rcv := startHookReceiver(t)
	rcv.mu.Lock()
	rcv.hold = func(n int, _ string) bool { return n > answered }
	rcv.mu.Unlock()
	rcv.subscribe(pc, pc.nodes[1])
	imeis := testIMEIs(t, "35693810200000", devices)
	pc.addDevices(imeis)
	dispatcher := pc.dispatcher()

	var urls []string
	for _, pn := range pc.nodes {
		urls = append(urls, pn.brokerURL())
	}
	log := newFleetLog()
	stopFleet := runFleet(t, log.options(devicesim.LoadOptions{BrokerURLs: urls, IMEIs: imeis,
		FactoryMasterKey: factoryMasterKey(t), EventInterval: 250 * time.Millisecond}))
	within(t, patience, "events acknowledged", func() bool { return log.count(protocol.TopicEvent) >= 5*devices })
	stopFleet()
	within(t, patience, "deliveries held open at the receiver", func() bool {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		return rcv.requests >= answered+2
	})

	dispatcher.kill()
	within(t, patience, "the receiver to see the held deliveries' connections end", func() bool {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		return len(rcv.held) >= 2
	})
	rcv.mu.Lock()
	rcv.hold = nil
	held := slices.Collect(maps.Keys(rcv.held))
	rcv.mu.Unlock()
	rcv.releaseHeld()
	t.Logf("killed %s with %d deliveries in flight", dispatcher.id, len(held))

	checkWebhooks(t, pc, rcv, log.acks, patience)
	rcv.mu.Lock()
	for _, id := range held {
		if !rcv.answered[id] || rcv.seen[id] < 2 {
			t.Errorf("delivery %s, in flight at the kill, arrived %d times and was answered: %v; want it delivered again", id, rcv.seen[id], rcv.answered[id])
		}
	}
	rcv.mu.Unlock()
	took := 0
	for _, pn := range pc.nodes {
		if pn != dispatcher {
			took += pn.took("webhooks")
		}
	}
	if took == 0 {
		t.Fatal("no live node took webhook delivery after the kill")
	}
}
