package devicesim

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// runLoad runs a load fleet until the returned stop function is called;
// stop fails the test when Run does not return promptly.
func runLoad(t *testing.T, o LoadOptions) (*LoadFleet, func()) {
	t.Helper()
	f, err := NewLoadFleet(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = f.Run(ctx); close(done) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			t.Error("load fleet did not stop")
		}
	}
	t.Cleanup(stop)
	return f, stop
}

func TestLoadFleetBootstrapsAcknowledgesAndPublishes(t *testing.T) {
	cloud := newFakeCloud(t)
	imeis := []string{mustIMEI(t, 40), mustIMEI(t, 41), mustIMEI(t, 42)}
	cloud.mu.Lock()
	cloud.push = map[string]protocol.DesiredConfig{}
	for _, id := range imeis {
		cloud.push[id] = protocol.DesiredConfig{Version: 7}
	}
	cloud.mu.Unlock()
	var mu sync.Mutex
	acks := map[string][]Ack{}
	f, stop := runLoad(t, LoadOptions{
		BrokerURL: cloud.addr, IMEIs: imeis, FactoryMasterKey: testMaster, ReconnectDelay: 20 * time.Millisecond,
		GPSInterval: 10 * time.Millisecond, GPSBatch: 3, EventInterval: 40 * time.Millisecond, ConnectRate: 1000,
		OnAck: func(a Ack) { mu.Lock(); acks[a.Topic] = append(acks[a.Topic], a); mu.Unlock() },
	})
	for _, id := range imeis {
		if r := cloud.connect(t, id, 1); r.Kind != "bootstrap" || !r.Accepted || r.Clean {
			t.Fatalf("first connection of %s: %+v, want an accepted bootstrap with a persistent session", id, r)
		}
		m := cloud.msg(t, id, protocol.TopicConfigAck, nil)
		var ack protocol.ConfigAck
		if err := json.Unmarshal(m.Payload, &ack); err != nil || ack.Version != 7 {
			t.Fatalf("config ack %s: %v", m.Payload, err)
		}
		cloud.msg(t, id, protocol.TopicStatus, func(m cloudMsg) bool {
			var st protocol.Status
			return json.Unmarshal(m.Payload, &st) == nil && st.Firmware == DefaultFirmware
		})
		// Three GPS messages and two events each.
		cloud.msg(t, id, protocol.TopicGPS, func(cloudMsg) bool { return cloud.count(id, protocol.TopicGPS) >= 3 })
		cloud.msg(t, id, protocol.TopicEvent, func(cloudMsg) bool { return cloud.count(id, protocol.TopicEvent) >= 2 })
	}

	// The granted token is the password from the next connection on.
	victim := imeis[0]
	waitFor(t, cloud, func() []bool { return []bool{f.Stats().Snapshot().Grants == 3} }, func(b bool) bool { return b })
	cl, ok := cloud.srv.Clients.Get(victim)
	if !ok {
		t.Fatal("victim not connected")
	}
	_ = cloud.srv.DisconnectClient(cl, packets.ErrAdministrativeAction)
	if r := cloud.connect(t, victim, 2); r.Kind != "token" || !r.Accepted || r.Password != cloud.token(victim) {
		t.Fatalf("reconnection: %+v, want the granted token", r)
	}
	stop()

	// Every GPS message carries three fixes at strictly increasing times, and
	// the acknowledgement keys name the first fix and the event ids.
	cloud.mu.Lock()
	defer cloud.mu.Unlock()
	last := map[string]int64{}
	events := map[string]bool{}
	for _, m := range cloud.msgs {
		switch m.Suffix {
		case protocol.TopicGPS:
			var b protocol.GPSBatch
			if err := json.Unmarshal(m.Payload, &b); err != nil || len(b.Samples) != 3 {
				t.Fatalf("gps batch %s: %v", m.Payload, err)
			}
			for _, s := range b.Samples {
				if s.Time <= last[m.IMEI] || s.Lat == 0 || s.Lon == 0 {
					t.Fatalf("gps sample %+v after %d", s, last[m.IMEI])
				}
				last[m.IMEI] = s.Time
			}
		case protocol.TopicEvent:
			var ev protocol.Event
			if err := json.Unmarshal(m.Payload, &ev); err != nil || ev.ID != "L"+strconv.FormatInt(ev.Time, 10) || ev.Type == "" || len(ev.Samples) != 1 {
				t.Fatalf("event %s: %v", m.Payload, err)
			}
			events[m.IMEI+" "+ev.ID] = true
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range acks[protocol.TopicEvent] {
		if !events[a.IMEI+" "+a.Key] || a.Latency <= 0 || a.At.IsZero() {
			t.Fatalf("event ack %+v names no event the cloud received", a)
		}
	}
	if len(acks[protocol.TopicGPS]) < 9 || len(acks[protocol.TopicEvent]) < 6 {
		t.Fatalf("acks: %d GPS, %d events", len(acks[protocol.TopicGPS]), len(acks[protocol.TopicEvent]))
	}
	s := f.Stats().Snapshot()
	if s.FirstConnects != 3 || s.Online != 0 || s.ConfigAcks < 3 || s.Ack.Count == 0 || s.AllConnected <= 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestLoadFleetClosedLoopWithSeededTokens(t *testing.T) {
	cloud := newFakeCloud(t)
	seed := []byte("a load test's token seed")
	imeis, err := IMEIs("35693820000000", 4)
	if err != nil {
		t.Fatal(err)
	}
	cloud.mu.Lock()
	for _, id := range imeis {
		cloud.tokens[id] = LoadToken(seed, id)
	}
	cloud.mu.Unlock()
	if tok := LoadToken(seed, imeis[0]); len(tok) != 43 || tok == LoadToken(seed, imeis[1]) || tok == LoadToken([]byte("another seed"), imeis[0]) {
		t.Fatalf("LoadToken %q is not a distinct 43-character token", tok)
	}
	f, stop := runLoad(t, LoadOptions{BrokerURL: cloud.addr, IMEIs: imeis, TokenSeed: seed, ClosedLoop: true, Window: 2, NoStatus: true})
	for _, id := range imeis {
		cloud.msg(t, id, protocol.TopicGPS, func(cloudMsg) bool { return cloud.count(id, protocol.TopicGPS) >= 50 })
	}
	stop()
	s := f.Stats().Snapshot()
	if s.Refused != 0 || s.Errors() != 0 || s.GPSBatches < 200 || s.Online != 0 {
		t.Fatalf("stats %+v (last error %s)", s, s.LastError)
	}
	for _, r := range cloud.connects {
		if r.Kind != "token" || !r.Accepted {
			t.Fatalf("connection %+v, want the seeded token", r)
		}
	}
	if n := cloud.count(imeis[0], protocol.TopicStatus); n != 0 {
		t.Fatalf("%d status reports with NoStatus", n)
	}
}

func TestLoadFleetRetriesRefusedConnections(t *testing.T) {
	cloud := newFakeCloud(t)
	id := mustIMEI(t, 43)
	f, stop := runLoad(t, LoadOptions{BrokerURL: cloud.addr, IMEIs: []string{id}, TokenSeed: []byte("seed the cloud never saw"),
		ReconnectDelay: 10 * time.Millisecond, GPSInterval: 10 * time.Millisecond})
	cloud.connect(t, id, 4)
	stop()
	s := f.Stats().Snapshot()
	if s.Refused < 3 || s.FirstConnects != 0 || s.Published != 0 || !strings.Contains(s.LastError, "0x86") {
		t.Fatalf("stats %+v", s)
	}
}

func TestNewLoadFleetRefusesBadOptions(t *testing.T) {
	good := LoadOptions{BrokerURL: "tcp://127.0.0.1:1", IMEIs: []string{"490154203237518"}, FactoryMasterKey: testMaster}
	for name, tc := range map[string]struct {
		tweak func(*LoadOptions)
		want  string
	}{
		"no devices":        {func(o *LoadOptions) { o.IMEIs = nil }, "at least one imei"},
		"bad imei":          {func(o *LoadOptions) { o.IMEIs = []string{"490154203237519"} }, "check digit"},
		"twice":             {func(o *LoadOptions) { o.IMEIs = append(o.IMEIs, o.IMEIs[0]) }, "twice"},
		"no credential":     {func(o *LoadOptions) { o.FactoryMasterKey = nil }, "factoryMasterKey or a tokenSeed"},
		"negative rate":     {func(o *LoadOptions) { o.ConnectRate = -1 }, "connectRate"},
		"negative window":   {func(o *LoadOptions) { o.Window = -1 }, "window"},
		"bad broker":        {func(o *LoadOptions) { o.BrokerURL = "http://x:1" }, "scheme"},
		"keepalive too big": {func(o *LoadOptions) { o.KeepAlive = 70000 * time.Second }, "keepAlive"},
	} {
		t.Run(name, func(t *testing.T) {
			o := good
			o.IMEIs = append([]string(nil), good.IMEIs...)
			tc.tweak(&o)
			_, err := NewLoadFleet(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// A fleet's timers start at spread phases, so its messages do not come in bursts.
func TestLoadDevicesSpreadTheirPhases(t *testing.T) {
	imeis, err := IMEIs("35693800000000", 1000)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewLoadFleet(LoadOptions{BrokerURL: "tcp://127.0.0.1:1", IMEIs: imeis, TokenSeed: []byte("seed")})
	if err != nil {
		t.Fatal(err)
	}
	var buckets [10]int
	for _, d := range f.devices {
		buckets[int(d.rand01()*10)]++
	}
	for i, n := range buckets {
		if n < 60 || n > 140 {
			t.Fatalf("phase decile %d holds %d of 1000 devices: %v", i, n, buckets)
		}
	}
}

// TestLoadFleetFailsOverToTheNextAddress: a fleet given the addresses of
// two brokers spreads over both; when one goes away its devices connect
// to the next address in their list, and are served there.
func TestLoadFleetFailsOverToTheNextAddress(t *testing.T) {
	a, b := newFakeCloud(t), newFakeCloud(t)
	imeis := []string{mustIMEI(t, 50), mustIMEI(t, 51), mustIMEI(t, 52), mustIMEI(t, 53)}
	var mu sync.Mutex
	at := map[string]string{}
	got := map[string][]string{}
	runLoad(t, LoadOptions{
		BrokerURLs: []string{a.addr, b.addr}, IMEIs: imeis, Firmware: "3.10", ReconnectDelay: 20 * time.Millisecond,
		OnConnect: func(imei, url string) { mu.Lock(); at[imei] = url; mu.Unlock() },
		OnReceive: func(imei, suffix string, _ []byte) { mu.Lock(); got[imei] = append(got[imei], suffix); mu.Unlock() },
	})
	where := func(want map[string]string) bool {
		mu.Lock()
		defer mu.Unlock()
		for imei, url := range want {
			if at[imei] != url {
				return false
			}
		}
		return true
	}
	spread := map[string]string{imeis[0]: a.addr, imeis[1]: b.addr, imeis[2]: a.addr, imeis[3]: b.addr}
	deadline := time.Now().Add(10 * time.Second)
	for !where(spread) {
		if time.Now().After(deadline) {
			t.Fatalf("devices at %v; want them spread over both addresses, %v", at, spread)
		}
		time.Sleep(10 * time.Millisecond)
	}
	a.stop()
	failed := map[string]string{imeis[0]: b.addr, imeis[1]: b.addr, imeis[2]: b.addr, imeis[3]: b.addr}
	deadline = time.Now().Add(10 * time.Second)
	for !where(failed) {
		if time.Now().After(deadline) {
			t.Fatalf("devices at %v after %s went away; want every one at %s", at, a.addr, b.addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.send(t, imeis[0], protocol.TopicConfig, protocol.DesiredConfig{Version: 9})
	m := b.msg(t, imeis[0], protocol.TopicConfigAck, nil)
	var ack protocol.ConfigAck
	if err := json.Unmarshal(m.Payload, &ack); err != nil || ack.Version != 9 {
		t.Fatalf("config ack at the second broker %s: %v", m.Payload, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got[imeis[0]]) == 0 || got[imeis[0]][len(got[imeis[0]])-1] != protocol.TopicConfig {
		t.Fatalf("OnReceive saw %v for %s; want the configuration last", got[imeis[0]], imeis[0])
	}
}

func TestLoadFleetRefusesBothBrokerURLAndBrokerURLs(t *testing.T) {
	_, err := NewLoadFleet(LoadOptions{BrokerURL: "tcp://127.0.0.1:1", BrokerURLs: []string{"tcp://127.0.0.1:2"},
		IMEIs: []string{mustIMEI(t, 60)}, Firmware: "3.10"})
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "brokerURL and brokerURLs") {
		t.Fatalf("got %v; want an error naming brokerURL and brokerURLs", err)
	}
}
