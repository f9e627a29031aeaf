package mqttd

import (
	"strings"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"
)

func TestInfoCounters(t *testing.T) {
	e := newEnv(t, Options{})
	e.h.set(func(h *handler) {
		h.publish = func(_ *Conn, pk *packets.Packet) error {
			if strings.HasSuffix(pk.TopicName, "/refused") {
				return packets.ErrQuotaExceeded
			}
			return nil
		}
	})
	info := e.srv.Info()
	type want struct{ clients, inflight, subs, received, sent int64 }
	check := func(step string, w want) {
		t.Helper()
		got := want{info.ClientsConnected.Load(), info.Inflight.Load(), info.Subscriptions.Load(),
			info.MessagesReceived.Load(), info.MessagesSent.Load()}
		if got != w {
			t.Errorf("%s: clients, inflight, subscriptions, received, sent = %v, want %v", step, got, w)
		}
	}
	check("start", want{})

	a, _ := e.rawConnect(5, "a", withExpiry(60, true))
	b, _ := e.rawConnect(4, "b", nil)
	check("connected", want{clients: 2})

	a.Subscribe(1, "a/down", "a/more/#")
	b.Subscribe(1, "b/down")
	check("subscribed", want{clients: 2, subs: 3})

	a.Publish("a/up", "0", 0, 0)
	a.Publish("a/up", "1", 1, 2)
	a.Publish("a/refused", "2", 1, 3)
	b.Publish("b/up", "3", 1, 2)
	if got := len(a.Sync()); got != 2 {
		t.Fatalf("a got %d PUBACKs, want 2", got)
	}
	if got := len(b.Sync()); got != 1 {
		t.Fatalf("b got %d PUBACKs, want 1", got)
	}
	check("published", want{clients: 2, subs: 3, received: 4})

	e.publish("a", "a/down", "x", true)
	e.publish("a", "a/more/x", "y", true)
	e.publish("b", "b/down", "z", true)
	e.publish("b", "b/other", "-", false)
	check("sent", want{clients: 2, inflight: 3, subs: 3, received: 4, sent: 3})

	first := a.Expect(packets.Publish)
	a.Expect(packets.Publish)
	a.Ack(first.PacketID)
	a.Sync()
	check("acknowledged", want{clients: 2, inflight: 2, subs: 3, received: 4, sent: 3})

	// Bytes: what the clients wrote and read so far (nothing is unread).
	b.Expect(packets.Publish)
	waitFor(t, "byte counters", func() bool {
		return info.BytesReceived.Load() == int64(a.Sent()+b.Sent()) && info.BytesSent.Load() == int64(a.Received()+b.Received())
	})

	// a drops and resumes: its unacknowledged message is sent again.
	_ = a.Conn().Close()
	e.h.await(t, "closed", "a", 1)
	check("a offline", want{clients: 1, inflight: 2, subs: 3, received: 4, sent: 3})
	a, _ = e.rawConnect(5, "a", withExpiry(60, false))
	a.Expect(packets.Publish)
	a.Sync() // the resend was counted before the connection read on
	check("a resumed", want{clients: 2, inflight: 2, subs: 3, received: 4, sent: 4})

	// b's session ends with its connection.
	b.Disconnect(nil)
	e.h.await(t, "closed", "b", 1)
	check("b gone", want{clients: 1, inflight: 1, subs: 2, received: 4, sent: 4})
	if n := info.MessagesDropped.Load(); n != 0 {
		t.Errorf("MessagesDropped = %d, want 0", n)
	}
	if n := info.Panics.Load(); n != 0 {
		t.Errorf("Panics = %d, want 0", n)
	}
}
