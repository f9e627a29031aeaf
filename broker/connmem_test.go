package broker

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
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
		conns = append(conns, c)
		r := bufio.NewReader(c)
		id := fmt.Sprintf("3576601%08d", i)
		send(b, c, packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect}, ProtocolVersion: 5,
			Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), Keepalive: 300, ClientIdentifier: id}})
		expect(b, r, packets.Connack)
		if shape == "connect" {
			continue
		}
		send(b, c, packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1}, ProtocolVersion: 5,
			PacketID: 1, Filters: packets.Subscriptions{{Filter: "fleetcam/" + id + "/down/#", Qos: 1}}})
		expect(b, r, packets.Suback)
		if shape == "subscribe" {
			continue
		}
		if err := srv.Publish("fleetcam/"+id+"/down/config", []byte(`{"version":1}`), false, 1); err != nil {
			b.Fatal(err)
		}
		body := expect(b, r, packets.Publish)
		if len(body) < 4 {
			b.Fatalf("short PUBLISH %x", body)
		}
		tlen := int(body[0])<<8 | int(body[1])
		send(b, c, packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, ProtocolVersion: 5,
			PacketID: uint16(body[2+tlen])<<8 | uint16(body[3+tlen])})
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

func send(b *testing.B, c net.Conn, pk packets.Packet) {
	var buf bytes.Buffer
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = pk.ConnectEncode(&buf)
	case packets.Subscribe:
		err = pk.SubscribeEncode(&buf)
	case packets.Puback:
		err = pk.PubackEncode(&buf)
	}
	if err == nil {
		_, err = c.Write(buf.Bytes())
	}
	if err != nil {
		b.Fatal(err)
	}
}

// expect reads one packet of type typ and returns its body.
func expect(b *testing.B, r *bufio.Reader, typ byte) []byte {
	first, err := r.ReadByte()
	if err != nil {
		b.Fatal(err)
	}
	var n, shift int
	for {
		d, err := r.ReadByte()
		if err != nil {
			b.Fatal(err)
		}
		n |= int(d&0x7f) << shift
		if d&0x80 == 0 {
			break
		}
		shift += 7
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		b.Fatal(err)
	}
	if first>>4 != typ {
		b.Fatalf("packet type %d, want %d", first>>4, typ)
	}
	return body
}
