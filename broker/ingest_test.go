package broker

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

// messages returns the stored outbox messages of kind.
func (e *env) messages(kind string) []store.Message {
	e.t.Helper()
	var all []store.Message
	err := e.db.View(e.t.Context(), func(tx *store.Tx) error {
		var err error
		all, err = tx.MessagesAfter(0, 0)
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []store.Message
	for _, m := range all {
		if m.Kind == kind {
			out = append(out, m)
		}
	}
	return out
}

func TestEventRedeliveryStoredOnce(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	d, token := e.bootstrap(id)
	ev := protocol.Event{ID: "ev-1", Type: "deceleration", Time: e.clock.Now().UnixMilli(), Lat: 52.1, Lon: 4.3, Speed: 61,
		Files: []protocol.File{{CameraID: 1, FileID: "f1", FileType: "video"}}}
	for i := 0; i < 2; i++ {
		if pr, err := d.publish(protocol.TopicEvent, ev); err != nil || pr.ReasonCode != 0 {
			t.Fatalf("publish %d: %v %+v", i, err, pr)
		}
	}
	d.close()
	// The same event once more as an MQTT 3.1.1 redelivery (DUP set).
	rc, ack := e.rawConnect(4, id, id, token)
	if ack.ReasonCode != 0 {
		t.Fatalf("connack %#x", ack.ReasonCode)
	}
	payload := pahoPublish("", ev).Payload
	rc.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1, Dup: true}, PacketID: 3,
		TopicName: protocol.Topic(id, protocol.TopicEvent), Payload: payload})
	if pk := rc.Read(); pk.FixedHeader.Type != packets.Puback || pk.PacketID != 3 {
		t.Fatalf("got %+v, want PUBACK 3", pk.FixedHeader)
	}

	var events []store.Event
	err := e.db.View(t.Context(), func(tx *store.Tx) (err error) {
		events, _, err = tx.DeviceEvents(id, e.clock.Now().Add(-time.Hour), e.clock.Now().Add(time.Hour), store.Page{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var deceleration []store.Event
	for _, x := range events {
		if x.Type == "deceleration" {
			deceleration = append(deceleration, x)
		}
	}
	if len(deceleration) != 1 || deceleration[0].DeviceEventID != "ev-1" || deceleration[0].Speed != 61 {
		t.Fatalf("stored events %+v, want one deceleration", deceleration)
	}
	// The activation on first connect is an event too (deviceActivation).
	var decels []store.Message
	for _, m := range e.messages(store.MessageEvent) {
		if m.Event == nil {
			t.Fatalf("event message %+v carries no event", m)
		}
		if m.Event.Type != "deviceActivation" {
			decels = append(decels, m)
		}
	}
	if len(decels) != 1 {
		t.Fatalf("deceleration messages %d, want 1", len(decels))
	}
	data := decels[0].Event
	if data.ID != deceleration[0].ID || decels[0].IMEI != id || data.Type != "deceleration" ||
		data.Time.Unix() != e.clock.Now().Unix() || data.Speed != 61 || len(data.Files) != 1 || data.Files[0].FileID != "f1" ||
		data.Metadata != "" {
		t.Fatalf("event message fact %+v", data)
	}
}

// The event notifier hears about an event once it is committed, and the
// broker's own pipeline opens a trip on a power-on event.
func TestEventNotifiedAfterCommit(t *testing.T) {
	e := newEnv(t, nil)
	var mu sync.Mutex
	var got []string
	e.srv.Notify.Event = func(dev store.Device, ev protocol.Event) {
		var stored int
		e.db.View(t.Context(), func(tx *store.Tx) error {
			events, _, err := tx.DeviceEvents(dev.IMEI, time.UnixMilli(ev.Time), time.UnixMilli(ev.Time), store.Page{})
			stored = len(events)
			return err
		})
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s/%s stored %d", dev.IMEI, ev.ID, stored))
	}
	id := e.addDevice(1)
	d, _ := e.bootstrap(id)
	at := e.clock.Now().Add(-time.Minute).UnixMilli()
	if _, err := d.publish(protocol.TopicEvent, protocol.Event{ID: "x", Type: "accOn", Time: at}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := id + "/x stored 1"; len(got) != 1 || got[0] != want {
		t.Fatalf("notifier saw %v, want [%s]", got, want)
	}
	var trips []store.TripView
	e.db.View(t.Context(), func(tx *store.Tx) error {
		var err error
		trips, _, err = tx.Trips(store.TripFilter{IMEI: id}, store.Page{})
		return err
	})
	if len(trips) != 1 {
		t.Fatalf("trips after a power-on event: %+v", trips)
	}
}

func TestGPSStoredOncePerSample(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	e.setGPSWebhook("https://receiver.example.com/gps")
	d, _ := e.bootstrap(id)
	t0 := e.clock.Now()
	batch := protocol.GPSBatch{}
	for i := 0; i < 3; i++ {
		batch.Samples = append(batch.Samples, protocol.GPSSample{Time: t0.Add(time.Duration(i) * time.Second).UnixMilli(),
			Lat: 52 + float64(i)/100, Lon: 4.5, Alt: 3, Speed: 50, Accuracy: 4})
	}
	for i := 0; i < 2; i++ { // the second is a redelivery
		if _, err := d.publish(protocol.TopicGPS, batch); err != nil {
			t.Fatal(err)
		}
	}
	var all, window []store.GPSPoint
	err := e.db.View(t.Context(), func(tx *store.Tx) (err error) {
		if all, err = tx.GPS(id, t0.Add(-time.Minute), t0.Add(time.Minute), 0); err != nil {
			return err
		}
		window, err = tx.GPS(id, t0.Add(time.Second), t0.Add(2*time.Second), 1)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[2].Lat != 52.02 || all[0].Speed != 50 || !all[0].Time.Equal(t0) {
		t.Fatalf("stored %+v", all)
	}
	if len(window) != 1 || !window[0].Time.Equal(t0.Add(time.Second)) {
		t.Fatalf("range query with limit returned %+v", window)
	}
	msgs := e.messages(store.MessageGPS)
	if len(msgs) != 1 {
		t.Fatalf("gps messages %d", len(msgs))
	}
	if gps := msgs[0].GPS; msgs[0].IMEI != id || len(gps) != 3 || gps[2].Lat != 52.02 || gps[1].Time.Unix() != t0.Unix()+1 {
		t.Fatalf("gps message %+v", msgs[0])
	}
}

// setGPSWebhook saves the organization's GPS webhook URLs.
func (e *env) setGPSWebhook(urls ...string) {
	e.t.Helper()
	err := e.db.Update(e.t.Context(), store.Actor{Source: "cli"}, func(tx *store.Tx) error {
		return tx.PutWebhookSettings(&store.WebhookSettings{OrganizationID: e.org.ID, GPSURLs: urls})
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// GPS of an organization without GPS webhooks is stored without a webhook
// message; once a URL is saved, the next batch has one.
func TestGPSMessageOnlyWithReceivers(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	d, _ := e.bootstrap(id)
	sample := func(sec int) protocol.GPSBatch {
		return protocol.GPSBatch{Samples: []protocol.GPSSample{{Time: e.clock.Now().Add(time.Duration(sec) * time.Second).UnixMilli(),
			Lat: 52, Lon: 4.5, Speed: 30, Accuracy: 4}}}
	}
	if _, err := d.publish(protocol.TopicGPS, sample(1)); err != nil {
		t.Fatal(err)
	}
	if n := len(e.messages(store.MessageGPS)); n != 0 {
		t.Fatalf("%d gps messages without a gps webhook", n)
	}
	e.setGPSWebhook("https://receiver.example.com/gps")
	if _, err := d.publish(protocol.TopicGPS, sample(2)); err != nil {
		t.Fatal(err)
	}
	if n := len(e.messages(store.MessageGPS)); n != 1 {
		t.Fatalf("%d gps messages with a gps webhook, want 1", n)
	}
	e.setGPSWebhook()
	if _, err := d.publish(protocol.TopicGPS, sample(3)); err != nil {
		t.Fatal(err)
	}
	if n := len(e.messages(store.MessageGPS)); n != 1 {
		t.Fatalf("%d gps messages after the webhook was removed, want 1", n)
	}
	var stored []store.GPSPoint
	err := e.db.View(t.Context(), func(tx *store.Tx) (err error) {
		stored, err = tx.GPS(id, e.clock.Now(), e.clock.Now().Add(time.Minute), 0)
		return err
	})
	if err != nil || len(stored) != 3 {
		t.Fatalf("stored %d samples (%v), want 3", len(stored), err)
	}
}

func TestInvalidDeviceMessagesRefused(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	d, _ := e.bootstrap(id)
	now := e.clock.Now().UnixMilli()
	tests := []struct {
		name, suffix string
		payload      any
		code         byte
		reason       string
	}{
		{"not json", protocol.TopicGPS, []byte("{"), 0x99, "JSON"},
		{"data after the object", protocol.TopicStatus, []byte(`{"firmware":"3.12.1"} {"firmware":"x"}`), 0x99, "JSON"},
		{"latitude out of range", protocol.TopicGPS, protocol.GPSBatch{Samples: []protocol.GPSSample{{Time: now, Lat: 91}}}, 0x99, "samples[0]: lat must be from -90 to 90"},
		{"sample without time", protocol.TopicGPS, protocol.GPSBatch{Samples: []protocol.GPSSample{{Lat: 1}}}, 0x99, "samples[0]: time"},
		{"sample without a position", protocol.TopicGPS, []byte(fmt.Sprintf(`{"samples":[{"time":%d}]}`, now)), 0x99, "samples[0].lat is required"},
		{"sample with a null position", protocol.TopicGPS, []byte(fmt.Sprintf(`{"samples":[{"time":%d,"lat":null,"lon":null}]}`, now)),
			0x99, "samples[0].lat is required"},
		{"sample without lon", protocol.TopicGPS, []byte(fmt.Sprintf(`{"samples":[{"time":%d,"lat":52.1,"lon":null}]}`, now)),
			0x99, "samples[0].lon is required"},
		{"second sample without a position", protocol.TopicGPS,
			[]byte(fmt.Sprintf(`{"samples":[{"time":%d,"lat":52.1,"lon":4.8},{"time":%d,"speed":3}]}`, now, now+1000)), 0x99, "samples[1].lat is required"},
		{"event without id", protocol.TopicEvent, protocol.Event{Type: "button", Time: now}, 0x99, "id must"},
		{"event without type", protocol.TopicEvent, protocol.Event{ID: "e", Time: now}, 0x99, "type must"},
		{"unknown event type", protocol.TopicEvent, protocol.Event{ID: "e", Type: "de_acceleration", Time: now}, 0x99, "not a known event type"},
		{"event latitude", protocol.TopicEvent, protocol.Event{ID: "e", Type: "button", Time: now, Lat: -95}, 0x99, "lat must be from -90 to 90"},
		{"status without firmware", protocol.TopicStatus, protocol.Status{State: "online"}, 0x99, "firmware"},
		{"status with unknown state", protocol.TopicStatus, protocol.Status{Firmware: "3.12", State: "asleep"}, 0x99, "state must be online or standby"},
		{"data usage beyond the year 9999", protocol.TopicStatus, []byte(`{"firmware":"3.12.4","dataUsage":{"periodStart":300000000000,"bytesUp":5,"bytesDown":6}}`),
			0x99, "dataUsage.periodStart (unix seconds) must be a positive unix time before the year 10000"},
		{"negative data usage period", protocol.TopicStatus, protocol.Status{Firmware: "3.12.4", DataUsage: &protocol.DataUsage{PeriodStart: -1}},
			0x99, "dataUsage.periodStart"},
		{"event at time 0", protocol.TopicEvent, protocol.Event{ID: "e", Type: "button"}, 0x99, "time (unix milliseconds) must be a positive"},
		{"event in the year 10000", protocol.TopicEvent, protocol.Event{ID: "e", Type: "button", Time: 253402300800000}, 0x99, "time (unix milliseconds)"},
		{"event sample at time 0", protocol.TopicEvent, protocol.Event{ID: "e", Type: "button", Time: now, Samples: []protocol.Sample{{}}},
			0x99, "samples[0].time (unix seconds) must be a positive unix time before the year 10000"},
		{"event sample in the year 10000", protocol.TopicEvent, protocol.Event{ID: "e", Type: "button", Time: now,
			Samples: []protocol.Sample{{Time: now / 1000}, {Time: 253402300800}}}, 0x99, "samples[1].time"},
		{"event sample speed", protocol.TopicEvent, protocol.Event{ID: "e", Type: "button", Time: now,
			Samples: []protocol.Sample{{Time: now / 1000, Speed: -1}}}, 0x99, "samples[0].speed must not be negative"},
		{"event accuracy", protocol.TopicEvent, protocol.Event{ID: "e", Type: "button", Time: now, Accuracy: -1}, 0x99, "accuracy must not be negative"},
		{"reply without id", protocol.TopicReply, protocol.Reply{OK: true}, 0x99, "id must"},
		{"reply id of 65 characters", protocol.TopicReply, protocol.Reply{ID: strings.Repeat("é", 65), OK: true}, 0x99, "id must be at most 64 characters"},
		{"NUL in a string", protocol.TopicEvent, protocol.Event{ID: "e\x00", Type: "button", Time: now}, 0x99, "NUL character"},
		{"NUL in a member name", protocol.TopicStatus, []byte(`{"firmware":"3.12.1","x\u0000":1}`), 0x99, "NUL character"},
		{"unknown topic", "up/whatever", protocol.Status{}, 0x90, "unknown topic up/whatever"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pr, err := d.publish(tc.suffix, tc.payload)
			if err == nil || pr == nil || pr.ReasonCode != tc.code {
				t.Fatalf("err %v response %+v, want code %#x", err, pr, tc.code)
			}
			if pr.Properties == nil || !strings.Contains(pr.Properties.ReasonString, tc.reason) {
				t.Fatalf("reason %q does not contain %q", pr.Properties.ReasonString, tc.reason)
			}
		})
	}
	// An id of 64 characters is one.
	if pr, err := d.publish(protocol.TopicReply, protocol.Reply{ID: strings.Repeat("é", 64), OK: true}); err != nil || pr.ReasonCode != 0 {
		t.Fatalf("reply id of 64 characters: %v %+v", err, pr)
	}
	// The connection survives refusals, and nothing refused was stored.
	if pr, err := d.publish(protocol.TopicStatus, protocol.Status{Firmware: "3.12.1", State: "online"}); err != nil || pr.ReasonCode != 0 {
		t.Fatalf("valid status after refusals: %v %+v", err, pr)
	}
	err := e.db.View(t.Context(), func(tx *store.Tx) error {
		usage, err := tx.DataUsage(id, 10)
		if err == nil && len(usage) != 0 {
			err = fmt.Errorf("data usage %+v stored, want none", usage)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// A position at 0,0 that the device sent is one (in the Gulf of Guinea).
	if pr, err := d.publish(protocol.TopicGPS, []byte(fmt.Sprintf(`{"samples":[{"time":%d,"lat":0,"lon":0}]}`, now))); err != nil || pr.ReasonCode != 0 {
		t.Fatalf("sample at 0,0: %v %+v", err, pr)
	}
	err = e.db.View(t.Context(), func(tx *store.Tx) error {
		points, err := tx.GPS(id, time.UnixMilli(now), time.UnixMilli(now+1000), 0)
		if err == nil && (len(points) != 1 || points[0].Lat != 0 || points[0].Lon != 0) {
			err = fmt.Errorf("stored samples %+v, want the one at 0,0", points)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range e.messages(store.MessageEvent) {
		if m.Event.Type != store.EventDeviceActivation {
			t.Fatalf("a refused event was stored: %+v", m.Event)
		}
	}
}

func TestPresenceActivationAndStatus(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	d, _ := e.bootstrap(id)

	l := e.link(id)
	if l.Presence != store.PresenceOnline || l.ConnectionID == "" || l.ProtocolVersion != 5 || !l.ConnectedAt.Equal(e.clock.Now()) {
		t.Fatalf("link after connect %+v", l)
	}
	var dev *store.Device
	_ = e.db.View(t.Context(), func(tx *store.Tx) (err error) { dev, err = tx.Device(id); return })
	if dev.Status != store.DeviceActivated || dev.ActivatedAt.IsZero() {
		t.Fatalf("device %+v not activated by its first connection", dev)
	}
	if acts := e.messages(store.MessageActivation); len(acts) != 1 || acts[0].IMEI != id || acts[0].SubType != "deviceActivation" ||
		acts[0].Activation == nil || acts[0].Activation.EventID == 0 {
		t.Fatalf("activation messages %+v", acts)
	}

	on := true
	st := protocol.Status{Firmware: "3.12.4", ProductType: "AI-12", State: "standby", RecordingTest: "passed",
		SDCard: &protocol.SDCard{Present: true, Healthy: true, UUID: "u-1"}, Hotspot: &protocol.HotspotState{On: on},
		Cameras: []protocol.Camera{{ID: 1, Connected: true}, {ID: 50, Connected: true, Kind: "wifi", SerialNumber: "aux"}}}
	if _, err := d.publish(protocol.TopicStatus, st); err != nil {
		t.Fatal(err)
	}
	l = e.link(id)
	if l.Presence != store.PresenceStandby || l.Firmware != "3.12.4" || l.ProductType != "AI-12" ||
		l.Health == nil || l.Health.RecordingTest != "passed" || l.Health.SDCard.UUID != "u-1" ||
		len(l.Health.Cameras) != 2 || *l.Health.HotspotOn != true {
		t.Fatalf("link after status %+v (health %+v)", l, l.Health)
	}
	_ = e.db.View(t.Context(), func(tx *store.Tx) (err error) { dev, err = tx.Device(id); return })
	if dev.ProductType != "AI-12" {
		t.Fatalf("product type not recorded on the device: %+v", dev)
	}
	p, err := e.srv.Presence(id)
	if err != nil || p.Presence != store.PresenceStandby || !e.srv.Online(id) {
		t.Fatalf("Presence %+v %v", p, err)
	}

	d.close()
	waitFor(t, "offline presence", func() bool { return e.link(id).Presence == store.PresenceOffline })
	if e.srv.Online(id) {
		t.Fatal("disconnected device still online")
	}
	var statuses []string
	for _, m := range e.messages(store.MessageSystem) {
		if m.SubType == store.SystemDeviceStatus {
			statuses = append(statuses, fmt.Sprintf("%+v", *m.Presence))
		}
	}
	if len(statuses) != 3 || statuses[0] != "{Status:online Previous:offline}" ||
		statuses[1] != "{Status:standby Previous:online}" || statuses[2] != "{Status:offline Previous:standby}" {
		t.Fatalf("deviceStatus messages %v", statuses)
	}
	if e.metric("fleetcam_mqtt_connects_total", map[string]string{"result": "accepted"}) != 1 ||
		e.metric("fleetcam_mqtt_disconnects_total", nil) != 1 {
		t.Fatal("connect/disconnect not counted")
	}
	if _, err := e.srv.Presence(imei(404)); err == nil {
		t.Fatal("presence of a device not in inventory")
	}
}

func TestGroupCommitConcurrentPublishers(t *testing.T) {
	const devices, perDevice = 8, 40
	e := newEnv(t, func(c *configs.Config) { c.MQTT.CommitDelay = 3 * time.Millisecond })
	clients := make([]*dev, devices)
	ids := make([]string, devices)
	for i := range clients {
		ids[i] = e.addDevice(100 + i)
		clients[i], _ = e.bootstrap(ids[i])
	}
	batchesBefore := e.metric("fleetcam_store_commit_batch_jobs", nil)
	t0 := e.clock.Now()
	var wg sync.WaitGroup
	errs := make(chan error, devices*perDevice)
	for i, c := range clients {
		wg.Add(1)
		go func(i int, c *dev) {
			defer wg.Done()
			for m := 0; m < perDevice; m++ {
				b := protocol.GPSBatch{Samples: []protocol.GPSSample{{Time: t0.Add(time.Duration(m) * time.Second).UnixMilli(), Lat: float64(i), Lon: float64(m)}}}
				if pr, err := c.c.Publish(ctxT(t), &paho.Publish{Topic: protocol.Topic(c.imei, protocol.TopicGPS), QoS: 1,
					Payload: pahoPublish("", b).Payload}); err != nil || pr.ReasonCode != 0 {
					errs <- fmt.Errorf("device %d message %d: %v", i, m, err)
				}
			}
		}(i, c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Every acknowledged message is already on disk.
	err := e.db.View(t.Context(), func(tx *store.Tx) error {
		for i, id := range ids {
			pts, err := tx.GPS(id, t0, t0.Add(time.Hour), 0)
			if err != nil {
				return err
			}
			if len(pts) != perDevice {
				return fmt.Errorf("device %d: %d samples stored, want %d", i, len(pts), perDevice)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	batches := e.metric("fleetcam_store_commit_batch_jobs", nil) - batchesBefore
	if batches >= devices*perDevice {
		t.Fatalf("%v transactions for %d messages: no group commit", batches, devices*perDevice)
	}
	t.Logf("%d messages in %v transactions", devices*perDevice, batches)
}

// A connected device's stored last-seen time is refreshed at most every
// lastSeenEvery, while Presence reports its latest message; a changed
// inventory entry reaches the next message's job.
func TestLastSeenRefreshedSparingly(t *testing.T) {
	e := newEnv(t, nil)
	var mu sync.Mutex
	var names []string
	e.srv.Notify.Event = func(dev store.Device, _ protocol.Event) {
		mu.Lock()
		defer mu.Unlock()
		names = append(names, dev.Name)
	}
	id := e.addDevice(1)
	d, _ := e.bootstrap(id)
	connected := e.link(id).LastSeen
	gps := func(at time.Time) {
		t.Helper()
		batch := protocol.GPSBatch{Samples: []protocol.GPSSample{{Time: at.UnixMilli(), Lat: 52, Lon: 4.5, Speed: 50}}}
		if _, err := d.publish(protocol.TopicGPS, batch); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(10 * time.Second)
	gps(e.clock.Now())
	if got := e.link(id).LastSeen; !got.Equal(connected) {
		t.Fatalf("stored last seen %s rewritten 10s after the connection (%s)", got, connected)
	}
	p, err := e.srv.Presence(id)
	if err != nil || !p.LastSeen.Equal(e.clock.Now()) {
		t.Fatalf("presence last seen %s, want the latest message at %s (%v)", p.LastSeen, e.clock.Now(), err)
	}
	e.clock.Advance(lastSeenEvery)
	gps(e.clock.Now())
	if got := e.link(id).LastSeen; !got.Equal(e.clock.Now()) {
		t.Fatalf("stored last seen %s, want %s after %s", got, e.clock.Now(), lastSeenEvery)
	}

	// The job of the next message sees the changed inventory entry.
	event := func(n string) {
		t.Helper()
		if _, err := d.publish(protocol.TopicEvent, protocol.Event{ID: n, Type: "button", Time: e.clock.Now().UnixMilli()}); err != nil {
			t.Fatal(err)
		}
	}
	event("before")
	err = e.db.Update(t.Context(), store.Actor{Source: "cli"}, func(tx *store.Tx) error {
		dev, err := tx.Device(id)
		if err != nil {
			return err
		}
		dev.Name = "Renamed"
		return tx.UpdateDevice(dev, "test.rename")
	})
	if err != nil {
		t.Fatal(err)
	}
	event("after")
	mu.Lock()
	defer mu.Unlock()
	if len(names) != 2 || names[0] != "cam "+id || names[1] != "Renamed" {
		t.Fatalf("notifier saw device names %q", names)
	}
}

// A refused message's reason is the store error's message: the field and
// the rule, or what is missing, without the store's own words.
func TestStoreReason(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{store.Invalid("lat", "must be from -90 to 90"), "lat must be from -90 to 90"},
		{fmt.Errorf("event: %w", store.NotFound("checked-in driver on device %s", "x")), "checked-in driver on device x not found"},
		{fmt.Errorf("broker: decode"), "broker: decode"},
	}
	for _, tc := range tests {
		if got := storeReason(tc.err); got != tc.want {
			t.Errorf("storeReason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
