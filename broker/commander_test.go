package broker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

func TestSendRequestResponse(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	_, token := e.bootstrap(id)
	var seen *paho.Publish
	d, err := e.connect(id, token, connectOpts{clean: true, subscribe: true,
		reply: func(cmd protocol.Command, p *paho.Publish) *protocol.Reply {
			seen = p
			if cmd.Name != protocol.CmdRecordingRanges {
				return &protocol.Reply{ID: cmd.ID, OK: false, Error: "unexpected command " + cmd.Name}
			}
			res, _ := json.Marshal(protocol.RecordingRanges{Cameras: []protocol.CameraRanges{{CameraID: 1, Ranges: [][2]int64{{10, 20}}}}})
			return &protocol.Reply{OK: true, Result: res} // the MQTT 5 correlation data identifies it
		}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.srv.Send(context.Background(), id, protocol.CmdRecordingRanges, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rr protocol.RecordingRanges
	if err := json.Unmarshal(r.Result, &rr); err != nil || len(rr.Cameras) != 1 || rr.Cameras[0].Ranges[0][1] != 20 {
		t.Fatalf("reply result %s: %v", r.Result, err)
	}
	var cmd protocol.Command
	d.decode(d.next(protocol.TopicCommand, 1), &cmd)
	if seen.Properties == nil || seen.Properties.ResponseTopic != protocol.Topic(id, protocol.TopicReply) ||
		string(seen.Properties.CorrelationData) != cmd.ID || r.ID != cmd.ID {
		t.Fatalf("command properties %+v, id %q, reply id %q", seen.Properties, cmd.ID, r.ID)
	}
	if e.metric("fleetcam_mqtt_commands_total", map[string]string{"result": "ok"}) != 1 {
		t.Fatal("command not counted")
	}
}

func TestSendFailedReply(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	_, token := e.bootstrap(id)
	_, err := e.connect(id, token, connectOpts{clean: true, subscribe: true,
		reply: func(cmd protocol.Command, _ *paho.Publish) *protocol.Reply {
			return &protocol.Reply{ID: cmd.ID, OK: false, Error: "no sd card"}
		}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.srv.Send(context.Background(), id, protocol.CmdFormatStorage, nil)
	if !errors.Is(err, ErrCommandFailed) || !strings.Contains(err.Error(), "no sd card") || r.Error != "no sd card" {
		t.Fatalf("reply %+v, err %v", r, err)
	}
}

// A reply that stores nothing reaches the waiting Send without waiting for
// a commit: here the store's writer is held for the whole command. (The
// device's next message waits for the reply's commit, as each does for
// the one before it.)
func TestSendReplyNotHeldByCommits(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	_, token := e.bootstrap(id)
	if _, err := e.connect(id, token, connectOpts{clean: true, subscribe: true,
		reply: func(cmd protocol.Command, _ *paho.Publish) *protocol.Reply {
			return &protocol.Reply{ID: cmd.ID, OK: cmd.Name == protocol.CmdRecordingRanges, Error: "not here"}
		}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		command string
		want    error
	}{{protocol.CmdRecordingRanges, nil}, {protocol.CmdFormatStorage, ErrCommandFailed}} {
		stored := func() float64 {
			return e.metric("fleetcam_mqtt_ingest_messages_total", map[string]string{"topic": protocol.TopicReply, "result": "stored"})
		}
		before := stored()
		release := holdWriter(t, e.db)
		_, err := e.srv.Send(context.Background(), id, tc.command, nil)
		release()
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s while a write is open: %v, want %v", tc.command, err, tc.want)
		}
		waitFor(t, "the reply committed", func() bool { return stored() > before })
	}
}

// holdWriter opens a write transaction of db and keeps it open until the
// returned release is called.
func holdWriter(t *testing.T, db *store.DB) (release func()) {
	held, end, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- db.Update(context.Background(), store.Actor{Source: "cli"}, func(*store.Tx) error {
			close(held)
			<-end
			return nil
		})
	}()
	<-held
	return func() {
		close(end)
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func TestSendTimeout(t *testing.T) {
	e := newEnv(t, func(c *configs.Config) { c.MQTT.CommandTimeout = 200 * time.Millisecond })
	id := e.addDevice(1)
	d, _ := e.bootstrap(id) // subscribed, never answers

	if _, err := e.srv.Send(context.Background(), id, protocol.CmdReboot, nil); !errors.Is(err, ErrCommandTimeout) {
		t.Fatalf("silent device: %v, want ErrCommandTimeout", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.srv.Send(ctx, id, protocol.CmdReboot, nil); !errors.Is(err, ErrCommandTimeout) {
		t.Fatalf("context deadline: %v, want ErrCommandTimeout", err)
	}
	if n := len(d.received(protocol.TopicCommand)); n != 2 {
		t.Fatalf("device received %d commands, want 2", n)
	}
}

func TestSendToOfflineDevice(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	if _, err := e.srv.Send(context.Background(), id, protocol.CmdReboot, nil); !errors.Is(err, ErrDeviceOffline) {
		t.Fatalf("never connected: %v", err)
	}
	boot, token := e.bootstrap(id)
	boot.close()
	waitFor(t, "device offline", func() bool { return !e.srv.Online(id) })
	if _, err := e.srv.Send(context.Background(), id, protocol.CmdReboot, nil); !errors.Is(err, ErrDeviceOffline) {
		t.Fatalf("after disconnect: %v", err)
	}
	// Connected but not subscribed to its commands: not ready either.
	if _, err := e.connect(id, token, connectOpts{clean: true}); err != nil {
		t.Fatal(err)
	}
	if !e.srv.Online(id) {
		t.Fatal("connected device not online")
	}
	if _, err := e.srv.Send(context.Background(), id, protocol.CmdReboot, nil); !errors.Is(err, ErrDeviceOffline) {
		t.Fatalf("unsubscribed device: %v", err)
	}
}

func TestQueuedCommandDeliveredOnReconnect(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	boot, token := e.bootstrap(id)
	boot.close()
	waitFor(t, "device offline", func() bool { return !e.srv.Online(id) })

	e.enqueue(id, protocol.CmdPrivacyMode, protocol.PrivacyModeArgs{Mode: "on"})
	queued := func() []store.QueuedCommand {
		var q []store.QueuedCommand
		_ = e.db.View(t.Context(), func(tx *store.Tx) (err error) { q, err = tx.QueuedCommands(id); return })
		return q
	}
	if q := queued(); len(q) != 1 || q[0].Name != protocol.CmdPrivacyMode {
		t.Fatalf("queue %+v", q)
	}

	// A connection that does not answer gets it, and so does the next one.
	silent := e.mustConnect(id, token)
	var cmd protocol.Command
	silent.decode(silent.next(protocol.TopicCommand, 1), &cmd)
	silent.close()

	answered := make(chan protocol.Command, 4)
	d, err := e.connect(id, token, connectOpts{clean: true, subscribe: true,
		reply: func(c protocol.Command, _ *paho.Publish) *protocol.Reply {
			answered <- c
			return &protocol.Reply{ID: c.ID, OK: true}
		}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-answered:
		var args protocol.PrivacyModeArgs
		if c.ID != cmd.ID || json.Unmarshal(c.Args, &args) != nil || args.Mode != "on" {
			t.Fatalf("redelivered %+v, first %+v", c, cmd)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("queued command not delivered on reconnect")
	}
	waitFor(t, "queue emptied by the reply", func() bool { return len(queued()) == 0 })

	// Queued while online: sent at once.
	e.enqueue(id, protocol.CmdPrivacyMode, protocol.PrivacyModeArgs{Mode: "off"})
	select {
	case c := <-answered:
		if !strings.Contains(string(c.Args), `"off"`) {
			t.Fatalf("got %s", c.Args)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("command queued while online not delivered")
	}
	waitFor(t, "queue emptied", func() bool { return len(queued()) == 0 })
	if n := len(d.received(protocol.TopicCommand)); n != 2 {
		t.Fatalf("device received %d commands, want 2", n)
	}
	audits, _, _ := e.db.AuditLog(t.Context(), store.AuditFilter{Action: "device.command.queue", EntityID: id}, store.Page{})
	if len(audits) != 2 {
		t.Fatalf("queue audit entries %d, want 2", len(audits))
	}
}

// A command queued in a transaction that rolls back is neither kept nor
// sent; one whose transaction commits is sent to the connected device
// right after the commit.
func TestQueuedCommandCommitsWithItsTransaction(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	d, _ := e.bootstrap(id)
	waitFor(t, "subscription", func() bool { return e.srv.subscribed(id, protocol.Topic(id, protocol.TopicCommand)) })

	refused := errors.New("the change is refused")
	err := e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		if err := e.srv.Enqueue(tx, id, protocol.CmdPrivacyMode, protocol.PrivacyModeArgs{Mode: "on"}); err != nil {
			return err
		}
		return refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("update: %v", err)
	}
	var q []store.QueuedCommand
	_ = e.db.View(t.Context(), func(tx *store.Tx) (err error) { q, err = tx.QueuedCommands(id); return })
	if len(q) != 0 {
		t.Fatalf("rolled back command kept: %+v", q)
	}
	// The next committed command is the first the device receives.
	e.enqueue(id, protocol.CmdPrivacyMode, protocol.PrivacyModeArgs{Mode: "off"})
	var cmd protocol.Command
	d.decode(d.next(protocol.TopicCommand, 1), &cmd)
	if !strings.Contains(string(cmd.Args), `"off"`) {
		t.Fatalf("first command received %s, want the committed one (off)", cmd.Args)
	}
}

func TestMQTT311CommandCorrelatedByPayload(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	boot, token := e.bootstrap(id)
	boot.close()

	rc, ack := e.rawConnect(4, id, id, token)
	if ack.ReasonCode != 0 {
		t.Fatalf("connack %#x", ack.ReasonCode)
	}
	rc.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1}, PacketID: 1,
		Filters: packets.Subscriptions{{Filter: protocol.DownFilter(id), Qos: 1}}})

	type result struct {
		r   protocol.Reply
		err error
	}
	done := make(chan result, 1)
	waitFor(t, "subscription", func() bool { return e.srv.subscribed(id, protocol.Topic(id, protocol.TopicCommand)) })
	go func() {
		r, err := e.srv.Send(context.Background(), id, protocol.CmdHotspot, protocol.HotspotArgs{On: true, Password: "Abcdefghij0123456789"})
		done <- result{r, err}
	}()
	for {
		pk := rc.Read()
		if pk.FixedHeader.Type != packets.Publish || !strings.HasSuffix(pk.TopicName, protocol.TopicCommand) {
			continue
		}
		var cmd protocol.Command
		if err := json.Unmarshal(pk.Payload, &cmd); err != nil || cmd.ID == "" || cmd.Name != protocol.CmdHotspot {
			t.Fatalf("command %s: %v", pk.Payload, err)
		}
		payload, _ := json.Marshal(protocol.Reply{ID: cmd.ID, OK: true})
		rc.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: pk.PacketID})
		rc.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1}, PacketID: 9,
			TopicName: protocol.Topic(id, protocol.TopicReply), Payload: payload})
		break
	}
	res := <-done
	if res.err != nil || !res.r.OK {
		t.Fatalf("reply %+v, err %v", res.r, res.err)
	}
}

func TestDisconnectDevice(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	if e.srv.Disconnect(id) {
		t.Fatal("disconnected a device that is not connected")
	}
	d, _ := e.bootstrap(id)
	if !e.srv.Disconnect(id) {
		t.Fatal("connected device not disconnected")
	}
	select {
	case <-d.c.Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("client still connected")
	}
	waitFor(t, "offline", func() bool { return !e.srv.Online(id) && e.link(id).Presence == store.PresenceOffline })
}
