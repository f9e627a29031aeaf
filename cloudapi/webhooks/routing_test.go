package webhooks

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

func TestRouting(t *testing.T) {
	const (
		ev1, ev2, gps, alarm, act = "https://a.example/ev1", "https://a.example/ev2", "https://a.example/gps", "https://a.example/alarm", "https://a.example/act"
		sysAll, sysRemoved        = "https://a.example/sys-all", "https://a.example/sys-removed"
		subEv, subGPS, subAlarm   = "https://b.example/ev", "https://b.example/gps", "https://b.example/alarm"
		subSys                    = "https://b.example/sys"
	)
	base := func(s *store.WebhookSettings) {
		s.EventURLs = []string{ev1, ev2}
		s.GPSURLs = []string{gps}
		s.AlarmURLs = []string{alarm}
		s.ActivationURLs = []string{act}
		s.SystemMessages = []store.SystemMessagesWebhook{
			{URL: sysAll, Config: store.SystemMessagesConfig{DeviceRemoved: true, DeviceStatus: true, PrivacyMode: true, AuxiliaryCamerasConnectionStatus: true}},
			{URL: sysRemoved, Config: store.SystemMessagesConfig{DeviceRemoved: true}},
		}
	}
	subs := []store.WebhookSubscription{
		{IMEI: devX, Type: store.WebhookTypeEvent, URL: subEv, NotifyMediaAvailable: true},
		{IMEI: devX, Type: store.WebhookTypeEvent, URL: ev1}, // also an organization URL: sent once
		{IMEI: devX, Type: store.WebhookTypeGPS, URL: subGPS},
		{IMEI: devX, Type: store.WebhookTypeAlarms, URL: subAlarm, SubscribeForAlarmUpdates: true},
		{IMEI: devX, Type: store.WebhookTypeSystemMessages, URL: subSys, System: store.SystemMessagesConfig{DeviceRemoved: true}},
	}
	tests := []struct {
		name     string
		settings func(*store.WebhookSettings)
		msg      store.Message
		payload  any
		want     []string
		check    func(t *testing.T, bodies map[string]Envelope)
	}{
		{name: "event to organization and device URLs, once each", settings: base,
			msg: store.Message{Kind: store.MessageEvent, IMEI: devX}, payload: map[string]any{"eventType": "accident"},
			want: []string{ev1, ev2, subEv},
			check: func(t *testing.T, b map[string]Envelope) {
				if b[ev1].MediaAvailable == nil || *b[ev1].MediaAvailable || b[ev1].Type != "event" {
					t.Fatalf("event envelope %+v", b[ev1])
				}
			}},
		{name: "event of another device skips the device subscriptions", settings: base,
			msg: store.Message{Kind: store.MessageEvent, IMEI: devY}, payload: map[string]any{"eventType": "accident"},
			want: []string{ev1, ev2}},
		{name: "beep event goes nowhere", settings: base,
			msg: store.Message{Kind: store.MessageEvent, IMEI: devX}, payload: map[string]any{"eventType": "food_drink_beep"}},
		{name: "virtual event without media is sent", settings: base,
			msg: store.Message{Kind: store.MessageEvent, IMEI: devY}, payload: map[string]any{"eventType": "virtual_event", "files": []any{}},
			want: []string{ev1, ev2}},
		{name: "media available to URLs that asked for it", settings: func(s *store.WebhookSettings) { base(s); s.NotifyMediaAvailable = false },
			msg: store.Message{Kind: store.MessageMediaUploaded, IMEI: devX}, payload: map[string]any{"eventType": "accident"},
			want: []string{subEv},
			check: func(t *testing.T, b map[string]Envelope) {
				if b[subEv].MediaAvailable == nil || !*b[subEv].MediaAvailable {
					t.Fatalf("media envelope %+v", b[subEv])
				}
			}},
		{name: "no mediaAvailable flag where media notifications are off", settings: func(s *store.WebhookSettings) { base(s); s.NotifyMediaAvailable = false },
			msg: store.Message{Kind: store.MessageEvent, IMEI: devY}, payload: map[string]any{"eventType": "accident"},
			want: []string{ev1, ev2},
			check: func(t *testing.T, b map[string]Envelope) {
				if b[ev1].MediaAvailable != nil {
					t.Fatalf("mediaAvailable sent to a URL that did not ask: %+v", b[ev1])
				}
			}},
		{name: "gps", settings: base, msg: store.Message{Kind: store.MessageGPS, IMEI: devX}, payload: map[string]any{"id": "a1b2"},
			want: []string{gps, subGPS}},
		{name: "alarm creation", settings: base, msg: store.Message{Kind: store.MessageAlarm, SubType: "created", IMEI: devX},
			want: []string{alarm, subAlarm}},
		{name: "alarm update only to URLs subscribed for updates", settings: base,
			msg:  store.Message{Kind: store.MessageAlarm, SubType: "closed", IMEI: devX},
			want: []string{subAlarm}},
		{name: "deviceRemoved to every URL that opted in", settings: base,
			msg:  store.Message{Kind: store.MessageSystem, SubType: store.SystemDeviceRemoved, IMEI: devX},
			want: []string{sysAll, sysRemoved, subSys},
			check: func(t *testing.T, b map[string]Envelope) {
				if b[sysAll].Type != "systemMessages" || b[sysAll].MessageType != "deviceRemoved" {
					t.Fatalf("system envelope %+v", b[sysAll])
				}
			}},
		{name: "privacyMode is opt-in", settings: base,
			msg:  store.Message{Kind: store.MessageSystem, SubType: store.SystemPrivacyMode, IMEI: devX},
			want: []string{sysAll}},
		{name: "auxiliary camera connection", settings: base,
			msg:  store.Message{Kind: store.MessageSystem, SubType: store.SystemAuxCameraStatus, IMEI: devY},
			want: []string{sysAll}},
		{name: "activation", settings: base, msg: store.Message{Kind: store.MessageActivation, SubType: "deviceActivation", IMEI: devY},
			want: []string{act}},
		{name: "nothing configured", settings: func(*store.WebhookSettings) {},
			msg: store.Message{Kind: store.MessageEvent, IMEI: devY}, payload: map[string]any{"eventType": "accident"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.d.Close() // route directly
			e.update(func(tx *store.Tx) error {
				s := store.DefaultWebhookSettings(e.org)
				tc.settings(s)
				if err := tx.PutWebhookSettings(s); err != nil {
					return err
				}
				for _, sub := range subs {
					sub.OrganizationID = e.org
					if _, err := tx.SaveWebhookSubscription(sub); err != nil {
						return err
					}
				}
				return nil
			})
			var targets []target
			e.update(func(tx *store.Tx) error {
				m := tc.msg
				m.OrganizationID = e.org
				m.Seq = 1
				if tc.payload != nil {
					m.Payload, _ = json.Marshal(tc.payload)
				}
				var err error
				targets, err = route(tx, &m)
				return err
			})
			var got []string
			bodies := map[string]Envelope{}
			for _, tg := range targets {
				got = append(got, tg.url)
				var env Envelope
				if err := json.Unmarshal(tg.body, &env); err != nil {
					t.Fatal(err)
				}
				bodies[tg.url] = env
			}
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("routed to\n  %v\nwant\n  %v", got, want)
			}
			if tc.check != nil {
				tc.check(t, bodies)
			}
		})
	}
}

// TestDeviceRemovedReachesDeviceSubscription removes a device with a
// deviceRemoved subscription: the message reaches it, and the device's
// subscriptions go afterwards.
func TestDeviceRemovedReachesDeviceSubscription(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, nil)
	var partnerID int64
	e.update(func(tx *store.Tx) error {
		o, _ := tx.Organization(e.org)
		partnerID = o.PartnerID
		if err := tx.AddDevice(&store.Device{IMEI: devX, OrganizationID: e.org, PartnerID: partnerID}); err != nil {
			return err
		}
		_, err := tx.SaveWebhookSubscription(store.WebhookSubscription{OrganizationID: e.org, IMEI: devX,
			Type: store.WebhookTypeSystemMessages, URL: rc.url("/removed"), System: store.SystemMessagesConfig{DeviceRemoved: true}})
		return err
	})
	e.clock.Advance(1)
	e.update(func(tx *store.Tx) error { return tx.RemoveDevice(devX) })
	r := rc.wait(e, 1)[0]
	if r.env.Type != "systemMessages" || r.env.MessageType != "deviceRemoved" || r.data()["serialNumber"] != devX {
		t.Fatalf("deviceRemoved webhook %s", r.body)
	}
	e.waitFor("subscriptions dropped", func() bool {
		var n int
		e.db.View(t.Context(), func(tx *store.Tx) error {
			subs, _ := tx.WebhookSubscriptions(e.org, devX)
			n = len(subs)
			return nil
		})
		return n == 0
	})
}
