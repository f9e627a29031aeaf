package mqttd

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/eclipse/paho.golang/paho"
	"github.com/mochi-mqtt/server/v2/packets"
)

func TestSubscribeGrants(t *testing.T) {
	subs := []packets.Subscription{
		{Filter: "cam/q0", Qos: 0},
		{Filter: "cam/q1", Qos: 1},
		{Filter: "cam/+/q2", Qos: 2},
		{Filter: "a/#/b", Qos: 1},
		{Filter: "a+", Qos: 1},
		{Filter: "cam/secret/#", Qos: 1},
		{Filter: "x#", Qos: 0},
	}
	cases := []struct {
		version byte
		want    []byte
	}{
		{5, []byte{0, 1, 1, 0x8F, 0x8F, 0x87, 0x8F}},
		{4, []byte{0, 1, 1, 0x80, 0x80, 0x80, 0x80}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("v%d", tc.version), func(t *testing.T) {
			e := newEnv(t, Options{})
			e.h.set(func(h *handler) { h.denied["cam/secret/#"] = true })
			rc, _ := e.rawConnect(tc.version, "cam", nil)
			if got := rc.SubscribeWith(1, subs).ReasonCodes; !bytes.Equal(got, tc.want) {
				t.Errorf("SUBACK codes % X, want % X", got, tc.want)
			}
			rc.Sync() // Subscribed runs after the SUBACK went out
			if n := len(e.h.all("subscribed", "cam")); n != 1 {
				t.Errorf("Subscribed called %d times, want 1", n)
			}
			// The handler is asked about valid filters only.
			var asked []string
			for _, ev := range e.h.all("cansubscribe", "cam") {
				asked = append(asked, ev.topic)
			}
			if fmt.Sprint(asked) != "[cam/q0 cam/q1 cam/+/q2 cam/secret/#]" {
				t.Errorf("CanSubscribe asked about %v", asked)
			}
			if n := e.srv.Info().Subscriptions.Load(); n != 3 {
				t.Errorf("Subscriptions = %d, want 3", n)
			}
			for topic, want := range map[string]bool{"cam/q0": true, "cam/q1": true, "cam/x/q2": true, "cam/secret/a": false, "a/x/b": false} {
				if got := e.srv.Subscribed("cam", topic); got != want {
					t.Errorf("Subscribed(cam, %q) = %v, want %v", topic, got, want)
				}
			}
		})
	}
}

func TestSubscribedOnlyWhenGranted(t *testing.T) {
	e := newEnv(t, Options{})
	e.h.set(func(h *handler) { h.denied["cam/secret"] = true })
	rc, _ := e.rawConnect(5, "cam", nil)
	if got := rc.Subscribe(1, "cam/secret", "a/#/b"); !bytes.Equal(got.ReasonCodes, []byte{0x87, 0x8F}) {
		t.Fatalf("SUBACK codes % X", got.ReasonCodes)
	}
	rc.Sync()
	if n := len(e.h.all("subscribed", "cam")); n != 0 {
		t.Errorf("Subscribed called %d times for a SUBACK that granted nothing", n)
	}
	if e.srv.Info().Subscriptions.Load() != 0 || e.srv.Subscribed("cam", "cam/secret") {
		t.Error("a refused filter was kept")
	}
	rc.Subscribe(2, "cam/ok")
	rc.Sync()
	if n := len(e.h.all("subscribed", "cam")); n != 1 {
		t.Errorf("Subscribed called %d times, want 1", n)
	}
}

func TestSubscribeWithPaho(t *testing.T) {
	e := newEnv(t, Options{})
	e.h.set(func(h *handler) { h.denied["cam/secret"] = true })
	pc := e.mustPaho("cam", nil)
	if got := pc.subscribe("cam/down", "cam/secret"); !bytes.Equal(got, []byte{1, 0x87}) {
		t.Errorf("SUBACK codes % X, want 01 87", got)
	}
	e.h.await(t, "subscribed", "cam", 1)
}

func TestServerSubscribedFollowsWildcards(t *testing.T) {
	e := newEnv(t, Options{})
	rc, _ := e.rawConnect(5, "cam", nil)
	rc.Subscribe(1, "dev/+/cmd", "x/#", "exact/topic")
	cases := map[string]bool{
		"dev/1/cmd":   true,
		"dev//cmd":    true,
		"dev/1/2/cmd": false,
		"dev/1":       false,
		"x":           true,
		"x/y":         true,
		"x/y/z":       true,
		"xy":          false,
		"exact/topic": true,
		"exact":       false,
		"other":       false,
	}
	for topic, want := range cases {
		if got := e.srv.Subscribed("cam", topic); got != want {
			t.Errorf("Subscribed(cam, %q) = %v, want %v", topic, got, want)
		}
	}
	if e.srv.Subscribed("nobody", "x") {
		t.Error("Subscribed reports a subscription of an unknown client")
	}
}

func TestResubscribeKeepsOneSubscription(t *testing.T) {
	e := newEnv(t, Options{})
	rc, _ := e.rawConnect(5, "cam", nil)
	rc.Subscribe(1, "cam/a")
	rc.Subscribe(2, "cam/a")
	if n := e.srv.Info().Subscriptions.Load(); n != 1 {
		t.Errorf("Subscriptions = %d after subscribing twice to one filter, want 1", n)
	}
}

func TestUnsubscribe(t *testing.T) {
	for _, version := range []byte{5, 4} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := newEnv(t, Options{})
			rc, _ := e.rawConnect(version, "cam", nil)
			rc.Subscribe(1, "cam/a", "cam/b/#")
			ack := rc.Unsubscribe(2, "cam/b/#", "cam/never")
			if version == 5 && !bytes.Equal(ack.ReasonCodes, []byte{0x00, 0x11}) {
				t.Errorf("UNSUBACK codes % X, want 00 11", ack.ReasonCodes)
			}
			if e.srv.Subscribed("cam", "cam/b/c") || !e.srv.Subscribed("cam", "cam/a") {
				t.Error("unsubscribe removed the wrong filter")
			}
			if n := e.srv.Info().Subscriptions.Load(); n != 1 {
				t.Errorf("Subscriptions = %d, want 1", n)
			}
		})
	}

	// paho reads the codes too.
	e := newEnv(t, Options{})
	pc := e.mustPaho("cam", nil)
	pc.subscribe("cam/a")
	ack, err := pc.c.Unsubscribe(pc.ctx(), &paho.Unsubscribe{Topics: []string{"cam/a", "cam/a"}})
	if err != nil || !bytes.Equal(ack.Reasons, []byte{0x00, 0x11}) {
		t.Errorf("paho unsubscribe: %v, codes % X", err, ack.Reasons)
	}
}

func TestSubscribePacketIDInUse(t *testing.T) {
	for _, version := range []byte{5, 4} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := newEnv(t, Options{})
			rc, _ := e.rawConnect(version, "cam", nil)
			rc.Subscribe(1, "cam/down")
			if ok, err := e.srv.Publish("cam", "cam/down", []byte("cmd"), nil); !ok || err != nil {
				t.Fatalf("Publish: %v, %v", ok, err)
			}
			msg := rc.Expect(packets.Publish) // in flight, not acknowledged
			fail := byte(0x91)
			if version == 4 {
				fail = 0x80
			}
			got := rc.Subscribe(msg.PacketID, "cam/other", "cam/more").ReasonCodes
			if !bytes.Equal(got, []byte{fail, fail}) {
				t.Errorf("SUBACK codes % X for a packet id in flight, want % X % X", got, fail, fail)
			}
			if version == 5 {
				if ack := rc.Unsubscribe(msg.PacketID, "cam/down"); !bytes.Equal(ack.ReasonCodes, []byte{0x91}) {
					t.Errorf("UNSUBACK codes % X for a packet id in flight, want 91", ack.ReasonCodes)
				}
			}
			rc.Sync()
			if e.srv.Subscribed("cam", "cam/other") || !e.srv.Subscribed("cam", "cam/down") {
				t.Error("a SUBSCRIBE or UNSUBSCRIBE with a packet id in use changed the subscriptions")
			}
			if n := len(e.h.all("subscribed", "cam")); n != 1 {
				t.Errorf("Subscribed called %d times, want 1", n)
			}
			// Once acknowledged, the id is free again.
			rc.Ack(msg.PacketID)
			if got := rc.Subscribe(msg.PacketID, "cam/other").ReasonCodes; !bytes.Equal(got, []byte{1}) {
				t.Errorf("SUBACK codes % X after the PUBACK, want 01", got)
			}
		})
	}
}

func TestSharedSubscriptionsRefused(t *testing.T) {
	for version, want := range map[byte]byte{5: 0x9E, 4: 0x80} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := newEnv(t, Options{})
			rc, _ := e.rawConnect(version, "cam", nil)
			if got := rc.Subscribe(1, "$share/g/cam/down", "cam/down").ReasonCodes; !bytes.Equal(got, []byte{want, 1}) {
				t.Fatalf("SUBACK codes % X, want %02X 01", got, want)
			}
			for _, ev := range e.h.all("cansubscribe", "cam") {
				if ev.topic != "cam/down" {
					t.Errorf("CanSubscribe asked about %q", ev.topic)
				}
			}
		})
	}
}

func TestSubscriptionQuota(t *testing.T) {
	for version, refused := range map[byte]byte{5: 0x97, 4: 0x80} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := newEnv(t, Options{MaxSubscriptions: 2})
			rc, _ := e.rawConnect(version, "cam", nil)
			if got := rc.Subscribe(1, "cam/a", "cam/b", "cam/c").ReasonCodes; !bytes.Equal(got, []byte{1, 1, refused}) {
				t.Fatalf("SUBACK codes % X, want 01 01 %02X", got, refused)
			}
			// Subscribing again to a held filter is not a new one.
			if got := rc.SubscribeWith(2, []packets.Subscription{{Filter: "cam/a", Qos: 0}}).ReasonCodes; !bytes.Equal(got, []byte{0}) {
				t.Fatalf("resubscribe: SUBACK codes % X, want 00", got)
			}
			rc.Unsubscribe(3, "cam/b")
			if got := rc.Subscribe(4, "cam/c").ReasonCodes; !bytes.Equal(got, []byte{1}) {
				t.Fatalf("after an unsubscribe: SUBACK codes % X, want 01", got)
			}
			if n := e.srv.Info().Subscriptions.Load(); n != 2 {
				t.Errorf("Subscriptions = %d, want 2", n)
			}
			if e.srv.Subscribed("cam", "cam/b") || !e.srv.Subscribed("cam", "cam/c") {
				t.Error("the session's filters are not cam/a and cam/c")
			}
		})
	}
}
