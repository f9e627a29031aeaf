package cluster

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/fleetcam/fleetcam/broker/cluster/natstest"
)

// The cost of presence by subject interest (docs/cluster.md, "Scaling"):
// a node subscribes to fleetcam.device.<imei>.* for each device it holds,
// and a command or an Online check is a request on one of those subjects.
// Run with make bench-go or:
//
//	go test -run '^$' -bench Interest -benchtime 100000x ./broker/cluster/
//
// The server and the client run in this process: the memory per
// subscription counts both sides.

// BenchmarkInterestSubscribe subscribes one device's subjects per
// operation, as a node does when a device connects.
func BenchmarkInterestSubscribe(b *testing.B) {
	srv := natstest.Start(b)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	inbox := make(chan *nats.Msg, 1)
	subs := make([]*nats.Subscription, 0, b.N)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := range b.N {
		sub, err := nc.ChanSubscribe(deviceSubject(fmt.Sprintf("35%013d", i), "*"), inbox)
		if err != nil {
			b.Fatal(err)
		}
		subs = append(subs, sub)
	}
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for srv.Subscriptions() < uint32(b.N) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heapB/subscription")
	if got := srv.Subscriptions(); got < uint32(b.N) {
		b.Fatalf("the server holds %d subscriptions, want %d", got, b.N)
	}
	runtime.KeepAlive(subs)
}

// BenchmarkInterestRequest asks, per operation, whether a device is held
// (the where request of Online), with 100,000 devices held by three nodes.
func BenchmarkInterestRequest(b *testing.B) {
	const devices, nodes = 100_000, 3
	srv := natstest.Start(b)
	var conns []*nats.Conn
	for n := range nodes {
		nc, err := nats.Connect(srv.URL())
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		conns = append(conns, nc)
		for i := n; i < devices; i += nodes {
			if _, err := nc.Subscribe(deviceSubject(fmt.Sprintf("35%013d", i), "*"), func(m *nats.Msg) { m.Respond(nil) }); err != nil {
				b.Fatal(err)
			}
		}
		if err := nc.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	asker, err := nats.Connect(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer asker.Close()
	b.ResetTimer()
	for range b.N {
		if _, err := asker.Request(deviceSubject(fmt.Sprintf("35%013d", rand.IntN(devices)), "where"), nil, time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
