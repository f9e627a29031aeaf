package store_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

const testIMEI, testIMEI2 = "490154203237518", "356938035643809"

const testIMEI3, testIMEI4 = "356938035643817", "356938035643825"

// seedDevice adds an organization with one device and returns both.
func seedDevice(t *testing.T, db *DB, imeis ...string) *Organization {
	t.Helper()
	var org *Organization
	err := db.Update(t.Context(), Actor{Source: "cli"}, func(tx *Tx) error {
		p, err := tx.CreatePartner("P")
		if err != nil {
			return err
		}
		if org, err = tx.CreateOrganization(p.ID, "O", nil); err != nil {
			return err
		}
		for _, imei := range imeis {
			if err := tx.AddDevice(&Device{IMEI: imei, OrganizationID: org.ID, PartnerID: p.ID}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return org
}

func TestDeviceTokenIssueAndRevoke(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db := openTestDB(t)
		seedDevice(t, db, testIMEI)
		h1, h2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
		err := db.Update(t.Context(), Actor{Source: "device"}, func(tx *Tx) error {
			if err := tx.IssueDeviceToken(testIMEI, h1, 100); err != nil {
				return err
			}
			if err := tx.IssueDeviceToken(testIMEI, h2, 200); err != nil {
				return err
			}
			if err := tx.IssueDeviceToken(testIMEI, []byte("short"), 300); !errors.Is(err, ErrInvalid) {
				t.Errorf("short hash: %v", err)
			}
			c, err := tx.DeviceCredential(testIMEI)
			if err != nil {
				return err
			}
			if !bytes.Equal(c.TokenHash, h2) || c.Generation != 2 || c.LastBootstrap != 200 {
				t.Errorf("after two issues %+v", c)
			}
			if err := tx.RevokeDeviceToken(testIMEI, "factory reset"); err != nil {
				return err
			}
			c, _ = tx.DeviceCredential(testIMEI)
			if c.TokenHash != nil || c.RevokedAt.IsZero() || c.Generation != 2 {
				t.Errorf("after revoke %+v", c)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		entries, _, _ := db.AuditLog(t.Context(), AuditFilter{EntityID: testIMEI}, Page{})
		var actions []string
		for _, e := range entries {
			actions = append(actions, e.Action)
			if bytes.Contains(e.After, []byte("tokenHash")) {
				t.Errorf("audit entry %s carries the token hash", e.Action)
			}
		}
		if len(actions) != 4 || actions[0] != "device.token.revoke" || actions[1] != "device.token.issue" {
			t.Fatalf("audit actions %v", actions)
		}
	})
}

func TestQueuedCommandsAndDeviceRemoval(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db := openTestDB(t)
		seedDevice(t, db, testIMEI, testIMEI2)
		err := db.Update(t.Context(), Actor{Source: "cli"}, func(tx *Tx) error {
			for _, c := range []QueuedCommand{{ID: "1", IMEI: testIMEI, Name: "privacyMode"}, {ID: "2", IMEI: testIMEI, Name: "hotspot"},
				{ID: "3", IMEI: testIMEI2, Name: "reboot"}} {
				if err := tx.QueueCommand(&c); err != nil {
					return err
				}
			}
			if err := tx.QueueCommand(&QueuedCommand{IMEI: testIMEI, Name: "x"}); !errors.Is(err, ErrInvalid) {
				t.Errorf("command without id: %v", err)
			}
			if err := tx.QueueCommand(&QueuedCommand{ID: "9", IMEI: "000000000000000", Name: "x"}); !errors.Is(err, ErrNotFound) {
				t.Errorf("command for an unknown device: %v", err)
			}
			q, err := tx.QueuedCommands(testIMEI)
			if err != nil || len(q) != 2 || q[0].ID != "1" || q[1].ID != "2" {
				t.Errorf("queue %+v %v", q, err)
			}
			if ok, err := tx.DeleteQueuedCommand(testIMEI, "1"); !ok || err != nil {
				t.Errorf("delete: %v %v", ok, err)
			}
			if ok, _ := tx.DeleteQueuedCommand(testIMEI, "3"); ok {
				t.Error("deleted another device's command")
			}
			if _, err := tx.QueuedCommand(testIMEI, "1"); !errors.Is(err, ErrNotFound) {
				t.Errorf("deleted command still found: %v", err)
			}
			if err := tx.PutDeviceLink(&DeviceLink{IMEI: testIMEI, Presence: PresenceOnline}); err != nil {
				return err
			}
			return tx.RemoveDevice(testIMEI)
		})
		if err != nil {
			t.Fatal(err)
		}
		_ = db.View(t.Context(), func(tx *Tx) error {
			if q, _ := tx.QueuedCommands(testIMEI); len(q) != 0 {
				t.Errorf("removed device keeps %d queued commands", len(q))
			}
			if l, _ := tx.DeviceLink(testIMEI); l.Presence != PresenceOffline {
				t.Errorf("removed device keeps its link %+v", l)
			}
			if q, _ := tx.QueuedCommands(testIMEI2); len(q) != 1 {
				t.Errorf("other device's queue %+v", q)
			}
			return nil
		})
	})
}

func TestMarkAllOfflineAndOrganizationDevices(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db := openTestDB(t)
		org := seedDevice(t, db, testIMEI, testIMEI2)
		err := db.Update(t.Context(), Actor{Source: "system"}, func(tx *Tx) error {
			if err := tx.PutDeviceLink(&DeviceLink{IMEI: testIMEI, Presence: PresenceStandby, ConnectionID: "c"}); err != nil {
				return err
			}
			n, err := tx.MarkAllOffline(tx.Now())
			if err != nil || n != 1 {
				t.Errorf("marked %d: %v", n, err)
			}
			l, _ := tx.DeviceLink(testIMEI)
			if l.Presence != PresenceOffline || l.ConnectionID != "" || l.DisconnectedAt.IsZero() {
				t.Errorf("link %+v", l)
			}
			devs, total, err := tx.Devices(DeviceFilter{OrganizationID: org.ID}, Page{})
			if err != nil || total != 2 {
				t.Errorf("organization devices %d: %v", total, err)
			}
			_ = devs
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestMarkOfflineByNode: a node of a cluster marks offline only the
// connections it recorded; another node's stay online; the nodes links
// claim connections to are those of the links online.
func TestMarkOfflineByNode(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db := openTestDB(t)
		seedDevice(t, db, testIMEI, testIMEI2, testIMEI3, testIMEI4)
		err := db.Update(t.Context(), Actor{Source: "system"}, func(tx *Tx) error {
			// node_a's underscore is a LIKE wildcard that must match only itself.
			for imei, l := range map[string]DeviceLink{testIMEI: {Presence: PresenceOnline, ConnectionID: "node-a/1"},
				testIMEI2: {Presence: PresenceStandby, ConnectionID: "node-b/2"},
				testIMEI3: {Presence: PresenceOnline, ConnectionID: "node_a/3"},
				testIMEI4: {Presence: PresenceOnline, ConnectionID: "alone"}} {
				l.IMEI = imei
				if err := tx.PutDeviceLink(&l); err != nil {
					return err
				}
			}
			if nodes, err := tx.ConnectedNodes(); err != nil || !slices.Equal(slices.Sorted(slices.Values(nodes)), []string{"node-a", "node-b", "node_a"}) {
				t.Errorf("connected nodes %v: %v", nodes, err)
			}
			if n, err := tx.MarkOffline(tx.Now(), "node-a/"); err != nil || n != 1 {
				t.Errorf("marked %d: %v", n, err)
			}
			if l, _ := tx.DeviceLink(testIMEI); l.Presence != PresenceOffline || l.ConnectionID != "" {
				t.Errorf("node-a's device %+v", l)
			}
			if l, _ := tx.DeviceLink(testIMEI2); l.Presence != PresenceStandby || l.ConnectionID != "node-b/2" {
				t.Errorf("node-b's device %+v", l)
			}
			if l, _ := tx.DeviceLink(testIMEI3); l.Presence != PresenceOnline || l.ConnectionID != "node_a/3" {
				t.Errorf("node_a's device %+v", l)
			}
			if nodes, err := tx.ConnectedNodes(); err != nil || !slices.Equal(slices.Sorted(slices.Values(nodes)), []string{"node-b", "node_a"}) {
				t.Errorf("connected nodes after node-a's were marked offline %v: %v", nodes, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestGPSRangeAndRedelivery(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db := openTestDB(t)
		t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		pts := []GPSPoint{{Time: t0, Lat: 1, Lon: 2, Heading: 90}, {Time: t0.Add(time.Second), Lat: 1.1, Lon: 2},
			{Time: t0.Add(2 * time.Second), Lat: 1.2, Lon: 2}}
		err := db.Update(t.Context(), Actor{Source: "device"}, func(tx *Tx) error {
			added, err := tx.AddGPS(&Device{IMEI: testIMEI}, pts)
			if err != nil || len(added) != 3 {
				t.Errorf("added %d: %v", len(added), err)
			}
			if added, _ := tx.AddGPS(&Device{IMEI: testIMEI}, pts[1:]); len(added) != 0 {
				t.Errorf("redelivery added %d", len(added))
			}
			if _, err := tx.AddGPS(&Device{IMEI: testIMEI2}, []GPSPoint{{Time: t0, Lat: 5}}); err != nil {
				return err
			}
			if _, err := tx.AddGPS(&Device{IMEI: testIMEI}, []GPSPoint{{Time: t0, Lon: 200}}); !errors.Is(err, ErrInvalid) {
				t.Errorf("longitude 200: %v", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		_ = db.View(t.Context(), func(tx *Tx) error {
			got, _ := tx.GPS(testIMEI, t0.Add(time.Second), t0.Add(2*time.Second), 0)
			if len(got) != 2 || got[0].Lat != 1.1 || got[1].Lat != 1.2 {
				t.Errorf("range %+v", got)
			}
			all, _ := tx.GPS(testIMEI, t0.Add(-time.Hour), t0.Add(time.Hour), 0)
			if len(all) != 3 || all[0].Heading != 90 || !all[0].Time.Equal(t0) {
				t.Errorf("all %+v", all)
			}
			return nil
		})
	})
}

// TestAddGPSKeepsTheFirstOfEachMillisecond stores one message whose points
// repeat a millisecond stored before and one of their own: each
// millisecond keeps the first point that had it, and the points added are
// the others, in the message's order.
func TestAddGPSKeepsTheFirstOfEachMillisecond(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db := openTestDB(t)
		t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		dev := &Device{IMEI: testIMEI}
		err := db.Update(t.Context(), Actor{Source: "device"}, func(tx *Tx) error {
			if _, err := tx.AddGPS(dev, []GPSPoint{{Time: t0, Lat: 1}}); err != nil {
				return err
			}
			msg := []GPSPoint{
				{Time: t0.Add(5 * time.Millisecond), Lat: 2},
				{Time: t0.Add(300 * time.Microsecond), Lat: 3}, // t0's millisecond, stored before
				{Time: t0.Add(5*time.Millisecond + 400*time.Microsecond), Lat: 4},
				{Time: t0.Add(-time.Second), Lat: 5},
				{Time: t0.Add(-time.Second), Lat: 6},
			}
			added, err := tx.AddGPS(dev, msg)
			if err != nil {
				return err
			}
			want := []GPSPoint{{Time: t0.Add(5 * time.Millisecond), Lat: 2}, {Time: t0.Add(-time.Second), Lat: 5}}
			if !slices.EqualFunc(added, want, func(a, b GPSPoint) bool { return a.Time.Equal(b.Time) && a.Lat == b.Lat }) {
				t.Errorf("added %+v; want %+v", added, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		_ = db.View(t.Context(), func(tx *Tx) error {
			pts, err := tx.GPS(testIMEI, t0.Add(-time.Minute), t0.Add(time.Minute), 0)
			var lats []float64
			for _, p := range pts {
				lats = append(lats, p.Lat)
			}
			if err != nil || !slices.Equal(lats, []float64{5, 1, 2}) {
				t.Errorf("stored latitudes %v, %v; want [5 1 2]", lats, err)
			}
			return nil
		})
	})
}

// TestMarkOfflineEmitsDeviceStatus: every device MarkOffline sets offline
// gets one deviceStatus message with the presence it had, at the time
// given, in the same transaction; a device already offline or of another
// node gets none, and marking again emits nothing more.
func TestMarkOfflineEmitsDeviceStatus(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db := openTestDB(t)
		org := seedDevice(t, db, testIMEI, testIMEI2, testIMEI3, testIMEI4)
		at := time.Date(2026, 11, 30, 11, 42, 0, 0, time.UTC)
		var before int64
		err := db.Update(t.Context(), Actor{Source: "system"}, func(tx *Tx) error {
			for imei, l := range map[string]DeviceLink{testIMEI: {Presence: PresenceOnline, ConnectionID: "node-a/1"},
				testIMEI2: {Presence: PresenceStandby, ConnectionID: "node-a/2"},
				testIMEI3: {Presence: PresenceOnline, ConnectionID: "node-b/3"},
				testIMEI4: {Presence: PresenceOffline}} {
				l.IMEI = imei
				if err := tx.PutDeviceLink(&l); err != nil {
					return err
				}
			}
			msgs, err := tx.MessagesAfter(0, 0)
			if len(msgs) > 0 {
				before = msgs[len(msgs)-1].Seq
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		mark := func(prefix string) []Message {
			t.Helper()
			var msgs []Message
			err := db.Update(t.Context(), Actor{Source: "system"}, func(tx *Tx) error {
				if _, err := tx.MarkOffline(at, prefix); err != nil {
					return err
				}
				var err error
				msgs, err = tx.MessagesAfter(before, 0)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return msgs
		}
		got := mark("node-a/")
		want := map[string]string{testIMEI: PresenceOnline, testIMEI2: PresenceStandby}
		if len(got) != len(want) {
			t.Fatalf("%d messages, want one for each of %v: %+v", len(got), want, got)
		}
		for _, m := range got {
			if m.Kind != MessageSystem || m.SubType != SystemDeviceStatus || m.OrganizationID != org.ID || m.PartnerID != org.PartnerID ||
				m.Presence == nil || m.Presence.Status != PresenceOffline || m.Presence.Previous != want[m.IMEI] || !m.Time.Equal(at) {
				t.Errorf("message %+v (presence %+v), want %s going offline from %s at %v", m, m.Presence, m.IMEI, want[m.IMEI], at)
			}
			delete(want, m.IMEI)
		}
		if got := mark("node-a/"); len(got) != 2 {
			t.Errorf("marking again emitted %d more messages", len(got)-2)
		}
		if got := mark(""); len(got) != 3 || got[2].IMEI != testIMEI3 || got[2].Presence.Previous != PresenceOnline {
			t.Errorf("marking every link: %+v", got)
		}
	})
}
