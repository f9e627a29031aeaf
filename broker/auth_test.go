package broker

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

func TestBootstrapIssuesToken(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)

	d, token := e.bootstrap(id)
	if len(token) < 43 {
		t.Fatalf("token %q is shorter than 32 random bytes", token)
	}
	var cred *store.DeviceCredential
	var audits []store.AuditEntry
	err := e.db.View(t.Context(), func(tx *store.Tx) error {
		var err error
		cred, err = tx.DeviceCredential(id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(token))
	if string(cred.TokenHash) != string(sum[:]) || cred.Generation != 1 {
		t.Fatalf("stored credential %+v does not hold the SHA-256 of the granted token", cred)
	}
	audits, _, err = e.db.AuditLog(t.Context(), store.AuditFilter{Action: "device.token.issue", EntityID: id}, store.Page{})
	if err != nil || len(audits) != 1 {
		t.Fatalf("token issue audit entries: %d, %v", len(audits), err)
	}
	if e.metric("fleetcam_mqtt_bootstraps_total", nil) != 1 {
		t.Fatal("bootstrap not counted")
	}
	d.close()

	// The token alone now authenticates the device.
	again := e.mustConnect(id, token)
	if len(again.received(protocol.TopicToken)) != 0 {
		t.Fatal("a token connection must not be granted a new token")
	}
}

func TestTokenDeliveredWhenSubscribingLate(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	d, err := e.connect(id, e.bootstrapPassword(id), connectOpts{clean: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.subscribe(protocol.Topic(id, protocol.TopicToken)); err != nil {
		t.Fatal(err)
	}
	var g protocol.TokenGrant
	d.decode(d.next(protocol.TopicToken, 1), &g)
	if g.Token == "" || g.IssuedAt != e.clock.Now().Unix() {
		t.Fatalf("grant %+v", g)
	}
}

func TestConnectRefusals(t *testing.T) {
	e := newEnv(t, nil)
	known := e.addDevice(1)
	_, token := e.bootstrap(known)
	unknown := imei(999)
	wrongKey := protocol.BootstrapPassword(protocol.FactoryKey([]byte("another fleet's master key"), known), known, e.clock.Now())

	tests := []struct {
		name               string
		clientID, password string
		code               byte
		reason             string // the CONNACK's reason string
	}{
		{"no password", known, "", 0x86, "token missing, wrong or revoked"},
		{"wrong token", known, "not-the-token", 0x86, "token missing, wrong or revoked"},
		{"token of another length", known, token + "x", 0x86, "token missing, wrong or revoked"},
		{"bootstrap with the wrong factory key", known, wrongKey, 0x86, "bootstrap proof does not match"},
		{"unknown imei with a bootstrap proof", unknown, protocol.BootstrapPassword(protocol.FactoryKey(e.master, unknown), unknown, e.clock.Now()), 0x87,
			"imei is in no organization's inventory"},
		{"unknown imei with a token", unknown, token, 0x87, "imei is in no organization's inventory"},
		{"client id that is not an imei", "dashcam-1", token, 0x85, "client id is not an IMEI"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := e.connect(tc.clientID, tc.password, connectOpts{clean: true})
			if err == nil {
				t.Fatal("connection accepted")
			}
			if d.ack == nil || d.ack.ReasonCode != tc.code {
				t.Fatalf("connack %+v, want reason code %#x", d.ack, tc.code)
			}
			if d.ack.Properties == nil || d.ack.Properties.ReasonString != tc.reason {
				t.Fatalf("connack reason string %+v, want %q", d.ack.Properties, tc.reason)
			}
		})
	}
	// A device that asked for no problem information gets the code alone.
	_, ack := e.rawConnectWith(5, unknown, unknown, token, func(pk *packets.Packet) {
		pk.Properties.RequestProblemInfo, pk.Properties.RequestProblemInfoFlag = 0, true
	})
	if ack.ReasonCode != 0x87 || ack.Properties.ReasonString != "" {
		t.Fatalf("connack 0x%02x %q without problem information, want 0x87 and no reason string", ack.ReasonCode, ack.Properties.ReasonString)
	}
	if n := e.metric("fleetcam_mqtt_connects_total", map[string]string{"result": "bad_credentials"}); n != 4 {
		t.Fatalf("bad_credentials refusals counted %v, want 4", n)
	}
}

func TestBootstrapTimeChecks(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	key := protocol.FactoryKey(e.master, id)

	stale := protocol.BootstrapPassword(key, id, e.clock.Now().Add(-e.cfg.Devices.BootstrapSkew-time.Second))
	if d, err := e.connect(id, stale, connectOpts{clean: true}); err == nil || d.ack.ReasonCode != 0x86 {
		t.Fatalf("proof older than the skew: %v %+v", err, d.ack)
	}

	proof := e.bootstrapPassword(id)
	first := e.mustConnect(id, proof)
	first.close()
	// The same proof again is a replay, even within the skew window.
	if d, err := e.connect(id, proof, connectOpts{clean: true}); err == nil || d.ack.ReasonCode != 0x86 {
		t.Fatalf("replayed proof: %v %+v", err, d.ack)
	}
}

func TestReBootstrapRevokesOldToken(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	d1, old := e.bootstrap(id)
	d1.close()
	d2, fresh := e.bootstrap(id) // a factory-reset device bootstraps again
	d2.close()
	if old == fresh {
		t.Fatal("re-bootstrap returned the same token")
	}
	if d, err := e.connect(id, old, connectOpts{clean: true}); err == nil || d.ack.ReasonCode != 0x86 {
		t.Fatalf("old token after re-bootstrap: %v %+v", err, d.ack)
	}
	e.mustConnect(id, fresh)
}

func TestFactoryResetCommandRevokesToken(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	boot, token := e.bootstrap(id)
	boot.close()
	d, err := e.connect(id, token, connectOpts{clean: true, subscribe: true,
		reply: func(cmd protocol.Command, _ *paho.Publish) *protocol.Reply {
			return &protocol.Reply{ID: cmd.ID, OK: true}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.srv.Send(context.Background(), id, protocol.CmdFactoryReset, nil); err != nil {
		t.Fatal(err)
	}
	d.close()
	if d, err := e.connect(id, token, connectOpts{clean: true}); err == nil || d.ack.ReasonCode != 0x86 {
		t.Fatalf("token after factory reset: %v %+v", err, d.ack)
	}
	_, fresh := e.bootstrap(id)
	if fresh == token {
		t.Fatal("bootstrap after reset returned the revoked token")
	}
}

func TestLegacyFirmware(t *testing.T) {
	tests := []struct {
		name       string
		firmware   string
		allow      bool
		orgForbids bool
		hadToken   bool
		ok         bool
	}{
		{"below 3.12 allowed", "3.11.9", true, false, false, true},
		{"old major allowed", "2.4", true, false, false, true},
		{"3.12 needs a token", "3.12", true, false, false, false},
		{"newer needs a token", "4.0.1", true, false, false, false},
		{"disabled by configuration", "3.9", false, false, false, false},
		{"organization forbids it", "3.9", true, true, false, false},
		{"device was issued a token", "3.9", true, false, true, false},
		{"not a version", "abc", true, false, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *configs.Config) { c.Devices.AllowLegacyFirmware = tc.allow })
			id := e.addDevice(1)
			if tc.orgForbids {
				err := e.db.Update(t.Context(), store.Actor{Source: "cli"}, func(tx *store.Tx) error {
					return tx.PutOrgSettings(&store.OrgSettings{OrganizationID: e.org.ID, ForbidLegacyFirmware: true}, "organization.settings")
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if tc.hadToken {
				d, _ := e.bootstrap(id)
				d.close()
			}
			d, err := e.connect(id, protocol.LegacyPrefix+tc.firmware, connectOpts{clean: true})
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v %+v", err, d.ack)
				}
				if l := e.link(id); !l.Legacy || l.Firmware != tc.firmware {
					t.Fatalf("link %+v does not record the legacy firmware", l)
				}
				return
			}
			if err == nil || d.ack.ReasonCode != 0x86 {
				t.Fatalf("accepted or wrong code: %v %+v", err, d.ack)
			}
		})
	}
}

func TestMQTT311ReturnCodes(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	tests := []struct {
		name, clientID, password string
		code                     byte
	}{
		{"bad password", id, "wrong", 0x04},
		{"unknown imei", imei(77), "whatever", 0x05},
		{"client id not an imei", "x", "whatever", 0x02},
		{"accepted with a bootstrap proof", id, e.bootstrapPassword(id), 0x00},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ack := e.rawConnect(4, tc.clientID, tc.clientID, tc.password)
			if ack.FixedHeader.Type != packets.Connack || ack.ReasonCode != tc.code {
				t.Fatalf("got packet type %d code %#x, want CONNACK %#x", ack.FixedHeader.Type, ack.ReasonCode, tc.code)
			}
		})
	}
}

func TestConnectRateLimit(t *testing.T) {
	e := newEnv(t, func(c *configs.Config) {
		c.MQTT.ConnectRatePerIP = 0.001
		c.MQTT.ConnectBurstPerIP = 2
	})
	id := e.addDevice(1)
	for i := 0; i < 2; i++ {
		if d, err := e.connect(id, "wrong", connectOpts{clean: true}); err == nil || d.ack.ReasonCode != 0x86 {
			t.Fatalf("attempt %d: %v %+v", i, err, d.ack)
		}
	}
	d, err := e.connect(id, e.bootstrapPassword(id), connectOpts{clean: true})
	if err == nil || d.ack.ReasonCode != 0x9F {
		t.Fatalf("third connection within the burst: %v %+v, want 0x9F", err, d.ack)
	}
	if e.metric("fleetcam_mqtt_connects_total", map[string]string{"result": "rate_limited"}) != 1 {
		t.Fatal("rate-limited connection not counted")
	}
}
