package broker

import (
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/mqttd"
	"github.com/fleetcam/fleetcam/broker/mqttd/mqtttest"
)

// BenchmarkConnectionMemory measures what one idle connection costs the
// MQTT server alone (no fleetcam authentication, no store), for the
// connection shape fleetcam's devices have: CONNECT, one SUBSCRIBE to the
// device's down filter, one QoS 1 message delivered and acknowledged.
// "mqttd" is fleetcam's server; "mochi" is a bare mochi-mqtt 2.7.9 server
// with the options fleetcam used with it, kept as the baseline
// (docs/performance.md, part 1):
//
//	go test -run '^$' -bench ConnectionMemory ./broker
//
// The clients are raw TCP connections in this process, so the figures
// include about half a KiB of heap per connection for the client side's
// socket; they hold no goroutine.
func BenchmarkConnectionMemory(b *testing.B) {
	for _, server := range []string{"mqttd", "mochi"} {
		for _, shape := range []string{"connect", "subscribe", "delivered"} {
			b.Run(server+"/"+shape, func(b *testing.B) {
				for b.Loop() {
					stacks, heap := measureConnections(b, server, 2000, shape)
					b.ReportMetric(stacks, "stack-KiB/conn")
					b.ReportMetric(heap, "heap-KiB/conn")
				}
			})
		}
	}
}

// benchServer is an MQTT server under measurement.
type benchServer struct {
	addr     string
	publish  func(id, topic string) error
	inflight func() int64
	close    func()
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

func startMochi(b *testing.B) benchServer {
	caps := mqtt.NewDefaultServerCapabilities()
	caps.MaximumClientWritesPending = 32
	caps.MaximumQos, caps.RetainAvailable, caps.SharedSubAvailable, caps.TopicAliasMaximum = 1, 0, 0, 16
	srv := mqtt.New(&mqtt.Options{Capabilities: caps, InlineClient: true, ClientNetReadBufferSize: 512,
		SysTopicResendInterval: 300, Logger: slog.New(slog.DiscardHandler)})
	if err := srv.AddHook(&openHook{}, nil); err != nil {
		b.Fatal(err)
	}
	tcp := listeners.NewTCP(listeners.Config{ID: "bench", Address: "127.0.0.1:0"})
	if err := srv.AddListener(tcp); err != nil {
		b.Fatal(err)
	}
	if err := srv.Serve(); err != nil {
		b.Fatal(err)
	}
	return benchServer{addr: tcp.Address(),
		publish:  func(_, topic string) error { return srv.Publish(topic, []byte(`{"version":1}`), false, 1) },
		inflight: func() int64 { return atomic.LoadInt64(&srv.Info.Inflight) },
		close:    func() { srv.Close() }}
}

// openHandler admits every client and lets it use every topic.
type openHandler struct{}

func (openHandler) Connect(*mqttd.Conn, *packets.Packet) error { return nil }
func (openHandler) Online(*mqttd.Conn)                         {}
func (openHandler) Ready(*mqttd.Conn)                          {}
func (openHandler) Publish(*mqttd.Conn, *packets.Packet) error { return nil }
func (openHandler) CanSubscribe(*mqttd.Conn, string) bool      { return true }
func (openHandler) Subscribed(*mqttd.Conn)                     {}
func (openHandler) Closed(*mqttd.Conn)                         {}

func startMQTTD(b *testing.B) benchServer {
	srv := mqttd.New(mqttd.Options{MaxPending: 32, TopicAliasMaximum: topicAliasMaximum,
		Log: slog.New(slog.DiscardHandler)}, openHandler{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Serve("bench", ln); err != nil {
		b.Fatal(err)
	}
	return benchServer{addr: ln.Addr().String(),
		publish: func(id, topic string) error {
			_, err := srv.Publish(id, topic, []byte(`{"version":1}`), nil)
			return err
		},
		inflight: srv.Info().Inflight.Load,
		close:    func() { srv.Close() }}
}

func measureConnections(b *testing.B, server string, n int, shape string) (stackKiB, heapKiB float64) {
	var srv benchServer
	if server == "mochi" {
		srv = startMochi(b)
	} else {
		srv = startMQTTD(b)
	}
	defer srv.close()

	before := settledMemory()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range n {
		c, err := net.Dial("tcp", srv.addr)
		if err != nil {
			b.Fatal(err)
		}
		// Only the socket outlives the loop; the client's reader is
		// garbage by the time memory is read.
		conns = append(conns, c)
		rc := mqtttest.New(b, c, 5)
		id := fmt.Sprintf("3576601%08d", i)
		rc.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect},
			Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), Keepalive: 300, ClientIdentifier: id}})
		rc.Expect(packets.Connack)
		if shape == "connect" {
			continue
		}
		rc.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1},
			PacketID: 1, Filters: packets.Subscriptions{{Filter: "fleetcam/" + id + "/down/#", Qos: 1}}})
		rc.Expect(packets.Suback)
		if shape == "subscribe" {
			continue
		}
		if err := srv.publish(id, "fleetcam/"+id+"/down/config"); err != nil {
			b.Fatal(err)
		}
		pk := rc.Expect(packets.Publish)
		rc.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: pk.PacketID})
	}
	// Let the server finish with the last acknowledgements.
	deadline := time.Now().Add(5 * time.Second)
	for srv.inflight() > 0 && time.Now().Before(deadline) {
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
