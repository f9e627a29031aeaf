package broker

import (
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

func TestDeviceReachesOnlyItsOwnTopics(t *testing.T) {
	e := newEnv(t, nil)
	a, b := e.addDevice(1), e.addDevice(2)
	devA, _ := e.bootstrap(a)
	devB, _ := e.bootstrap(b)

	t.Run("subscribe", func(t *testing.T) {
		for _, tc := range []struct {
			filter string
			ok     bool
		}{
			{protocol.DownFilter(a), true},
			{protocol.Topic(a, protocol.TopicCommand), true},
			{protocol.DownFilter(b), false},
			{protocol.Topic(b, protocol.TopicConfig), false},
			{protocol.Prefix + "/+/down/#", false},
			{protocol.Prefix + "/#", false},
			{"#", false},
			{protocol.Prefix + "/" + a + "/#", false},
			{protocol.Prefix + "/" + a + "/up/#", false},
			{"$SYS/#", false},
			{"$share/g/" + protocol.DownFilter(a), false},
		} {
			sa, err := devA.subscribe(tc.filter)
			if tc.ok != (err == nil) {
				t.Errorf("subscribe %q: err %v, want ok=%v", tc.filter, err, tc.ok)
			}
			if !tc.ok && sa != nil && sa.Reasons[0] < 0x80 {
				t.Errorf("subscribe %q granted with code %#x", tc.filter, sa.Reasons[0])
			}
		}
	})

	t.Run("publish", func(t *testing.T) {
		gps := protocol.GPSBatch{Samples: []protocol.GPSSample{{Time: e.clock.Now().UnixMilli(), Lat: 1, Lon: 2}}}
		for _, topic := range []string{
			protocol.Topic(b, protocol.TopicGPS),
			protocol.Topic(b, protocol.TopicCommand),
			protocol.Topic(a, protocol.TopicCommand),
			protocol.Topic(a, "down/token"),
			"fleetcam/v1/" + a,
		} {
			pr, err := devA.c.Publish(ctxT(t), pahoPublish(topic, gps))
			if err == nil || pr == nil || pr.ReasonCode != 0x87 {
				t.Errorf("publish to %s: err %v, response %+v, want PUBACK 0x87", topic, err, pr)
			}
		}
		var points []store.GPSPoint
		_ = e.db.View(t.Context(), func(tx *store.Tx) error {
			points, _ = tx.GPS(b, time.Time{}, e.clock.Now().Add(time.Hour), 0)
			return nil
		})
		if len(points) != 0 {
			t.Fatalf("device a stored %d samples for device b", len(points))
		}
		if got := devB.received(protocol.TopicCommand); len(got) != 0 {
			t.Fatalf("device b received %d commands published by device a", len(got))
		}
		if pr, err := devA.publish(protocol.TopicGPS, gps); err != nil || pr.ReasonCode != 0 {
			t.Fatalf("publish to its own topic: %v %+v", err, pr)
		}
	})
}

func TestTopicAllowed(t *testing.T) {
	own, other := imei(1), imei(2)
	tests := []struct {
		topic string
		write bool
		ok    bool
	}{
		{protocol.Topic(own, protocol.TopicStatus), true, true},
		{protocol.Topic(own, "up/"), true, false},
		{protocol.Topic(own, "up/+"), true, false},
		{protocol.Topic(own, protocol.TopicConfig), true, false},
		{protocol.Topic(other, protocol.TopicStatus), true, false},
		{protocol.DownFilter(own), false, true},
		{protocol.Topic(own, protocol.TopicConfig), false, true},
		{protocol.Topic(own, "down/"), false, false},
		{protocol.Topic(own, protocol.TopicStatus), false, false},
		{protocol.DownFilter(other), false, false},
		{protocol.Prefix + "/+/down/config", false, false},
		{protocol.Prefix + "/" + own + "+/down/#", false, false},
	}
	for _, tc := range tests {
		if got := topicAllowed(own, tc.topic, tc.write); got != tc.ok {
			t.Errorf("topicAllowed(%q, write=%v) = %v, want %v", tc.topic, tc.write, got, tc.ok)
		}
	}
}

func TestWillOutsideOwnTopicsRefused(t *testing.T) {
	e := newEnv(t, nil)
	a, b := e.addDevice(1), e.addDevice(2)
	victim, _ := e.bootstrap(b)
	d := &dev{t: t, imei: a, notify: make(chan struct{}, 1)}
	conn, err := net.Dial("tcp", e.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	d.c = paho.NewClient(paho.ClientConfig{Conn: conn})
	cmd := pahoPublish("", protocol.Command{ID: "x", Name: protocol.CmdFactoryReset}).Payload
	ack, err := d.c.Connect(ctxT(t), &paho.Connect{ClientID: a, Username: a, UsernameFlag: true,
		Password: []byte(e.bootstrapPassword(a)), PasswordFlag: true, KeepAlive: 30, CleanStart: true,
		WillMessage: &paho.WillMessage{Topic: protocol.Topic(b, protocol.TopicCommand), QoS: 1, Payload: cmd}})
	if err == nil || ack.ReasonCode != 0x87 {
		t.Fatalf("will on another device's command topic: %v %+v", err, ack)
	}
	if n := len(victim.received(protocol.TopicCommand)); n != 0 {
		t.Fatalf("victim received %d commands", n)
	}
}

// TestWillOnAnUnknownUpTopicRefused: a will may name only one of the
// device's own up/ topics of the contract, in MQTT 5 (0x87) and 3.1.1
// (0x05); one of them is accepted.
func TestWillOnAnUnknownUpTopicRefused(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	for _, tc := range []struct {
		suffix  string
		version byte
		want    byte
	}{
		{"up/nope", 5, 0x87},
		{"up/nope", 4, 0x05},
		{"up/status/x", 5, 0x87},
		{"up/", 4, 0x05},
		{protocol.TopicStatus, 5, 0x00},
		{protocol.TopicStatus, 4, 0x00},
	} {
		_, ack := e.rawConnectWith(tc.version, id, id, e.bootstrapPassword(id), func(pk *packets.Packet) {
			pk.Connect.WillFlag, pk.Connect.WillQos = true, 1
			pk.Connect.WillTopic, pk.Connect.WillPayload = protocol.Prefix+"/"+id+"/"+tc.suffix, []byte("x")
		})
		if ack.ReasonCode != tc.want {
			t.Errorf("will on %s, MQTT version %d: CONNACK 0x%02X, want 0x%02X", tc.suffix, tc.version, ack.ReasonCode, tc.want)
		}
	}
}
