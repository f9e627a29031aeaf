package broker

import (
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// BenchmarkMochiConnectionMemory measures what one idle connection costs a
// bare mochi-mqtt server (no fleetcam hooks, no store) with fleetcam's
// broker options, for the connection shape fleetcam's devices have:
// CONNECT, one SUBSCRIBE to the device's down filter, one QoS 1 message
// delivered and acknowledged. It is the floor under fleetbench's memory per
// device (docs/performance.md, part 1):
//
//	go test -run '^$' -bench MochiConnectionMemory ./broker
//
// The clients are raw TCP connections in this process, so the figures
// include about half a KiB of heap per connection for the client side's
// socket; they hold no goroutine.
func BenchmarkMochiConnectionMemory(b *testing.B) {
	for _, shape := range []string{"connect", "subscribe", "delivered"} {
		b.Run(shape, func(b *testing.B) {
			for b.Loop() {
				stacks, heap := measureMochiConnections(b, 2000, shape)
				b.ReportMetric(stacks, "stack-KiB/conn")
				b.ReportMetric(heap, "heap-KiB/conn")
			}
		})
	}
}

// openHook lets every client connect and use every topic: the bare
// baseline has no authentication to measure.
type openHook struct{ mqtt.HookBase }

func (*openHook) ID() string { return "bench-open" }
func (*openHook) Provides(b byte) bool {
	return b == mqtt.OnConnectAuthenticate || b == mqtt.OnACLCheck
}
func (*openHook) OnConnectAuthenticate(*mqtt.Client, packets.Packet) bool { return true }
func (*openHook) OnACLCheck(*mqtt.Client, string, bool) bool              { return true }

func measureMochiConnections(b *testing.B, n int, shape string) (stackKiB, heapKiB float64) {
	caps := mqtt.NewDefaultServerCapabilities()
	caps.MaximumClientWritesPending = 32
	caps.MaximumQos, caps.RetainAvailable, caps.SharedSubAvailable, caps.TopicAliasMaximum = 1, 0, 0, 16
	srv := mqtt.New(&mqtt.Options{Capabilities: caps, InlineClient: true, ClientNetReadBufferSize: clientReadBuffer,
		SysTopicResendInterval: 300, Logger: slog.New(slog.DiscardHandler)})
	if err := srv.AddHook(&openHook{}, nil); err != nil {
		b.Fatal(err)
	}
	srv.AddHook(&sysTopicsHook{s: &Server{mochi: srv}}, nil)
	tcp := listeners.NewTCP(listeners.Config{ID: "bench", Address: "127.0.0.1:0"})
	if err := srv.AddListener(tcp); err != nil {
		b.Fatal(err)
	}
	if err := srv.Serve(); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	addr := tcp.Address()

	before := settledMemory()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		// Only the socket outlives the loop; the client's reader is
		// garbage by the time memory is read.
		conns = append(conns, c)
		rc := newRawClient(b, c, 5)
		id := fmt.Sprintf("3576601%08d", i)
		rc.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect},
			Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), Keepalive: 300, ClientIdentifier: id}})
		expect(b, rc, packets.Connack)
		if shape == "connect" {
			continue
		}
		rc.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1},
			PacketID: 1, Filters: packets.Subscriptions{{Filter: "fleetcam/" + id + "/down/#", Qos: 1}}})
		expect(b, rc, packets.Suback)
		if shape == "subscribe" {
			continue
		}
		if err := srv.Publish("fleetcam/"+id+"/down/config", []byte(`{"version":1}`), false, 1); err != nil {
			b.Fatal(err)
		}
		pk := expect(b, rc, packets.Publish)
		rc.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: pk.PacketID})
	}
	// Let the server finish with the last acknowledgements.
	deadline := time.Now().Add(5 * time.Second)
	for srv.Info.Inflight > 0 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	after := settledMemory()
	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) / 1024 }
	return per(after.StackInuse, before.StackInuse), per(after.HeapInuse, before.HeapInuse)
}

func settledMemory() runtime.MemStats {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m
}

// expect reads the next packet and fails unless it is of type typ.
func expect(b *testing.B, rc *rawClient, typ byte) packets.Packet {
	b.Helper()
	pk := rc.read()
	if pk.FixedHeader.Type != typ {
		b.Fatalf("packet type %d, want %d", pk.FixedHeader.Type, typ)
	}
	return pk
}
