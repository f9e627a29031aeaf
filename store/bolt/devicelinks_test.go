package bolt_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// Link states and credentials the older version stored, JSON under the
// IMEI, are read and rewritten under the same key; a device with none gets
// the defaults.
func TestDeviceLinkAndCredentialKeys(t *testing.T) {
	f := newDeviceFixture(t)
	imei := f.dev.IMEI
	f.put("device_links", []byte(imei), fmt.Appendf(nil,
		`{"imei":%q,"presence":"online","connectionId":"c1","connectedAt":"2026-03-10T09:00:00Z","protocolVersion":5,"ackedConfigVersion":3}`, imei))
	hash := bytes.Repeat([]byte{7}, 32)
	raw, _ := json.Marshal(hash)
	f.put("device_credentials", []byte(imei), fmt.Appendf(nil, `{"imei":%q,"tokenHash":%s,"generation":2,"lastBootstrap":100}`, imei, raw))
	f.view(func(tx *store.Tx) error {
		l, err := tx.DeviceLink(imei)
		if err != nil || l.Presence != store.PresenceOnline || l.ConnectionID != "c1" || l.ProtocolVersion != 5 || l.AckedConfigVersion != 3 {
			t.Errorf("stored link read as %+v %v", l, err)
		}
		if l, err := tx.DeviceLink("490154203237526"); err != nil || l.Presence != store.PresenceOffline || l.IMEI != "490154203237526" {
			t.Errorf("link of a device that never connected %+v %v", l, err)
		}
		c, err := tx.DeviceCredential(imei)
		if err != nil || c.Generation != 2 || !bytes.Equal(c.TokenHash, hash) || c.LastBootstrap != 100 {
			t.Errorf("stored credential read as %+v %v", c, err)
		}
		if c, err := tx.DeviceCredential("490154203237526"); err != nil || c.Generation != 0 || c.IMEI != "490154203237526" {
			t.Errorf("credential of a device never issued a token %+v %v", c, err)
		}
		return nil
	})

	// The broker's start marks the stored link offline, in place.
	at := f.clock.Now()
	f.update(func(tx *store.Tx) error {
		n, err := tx.MarkAllOffline(at)
		if n != 1 {
			t.Errorf("marked %d links offline, want 1", n)
		}
		return err
	})
	var l store.DeviceLink
	if err := json.Unmarshal(f.get("device_links", []byte(imei)), &l); err != nil ||
		l.Presence != store.PresenceOffline || l.ConnectionID != "" || !l.DisconnectedAt.Equal(at) || l.ProtocolVersion != 5 {
		t.Errorf("link after MarkAllOffline %+v %v", l, err)
	}

	f.update(func(tx *store.Tx) error { return tx.IssueDeviceToken(imei, bytes.Repeat([]byte{8}, 32), 200) })
	var c store.DeviceCredential
	if err := json.Unmarshal(f.get("device_credentials", []byte(imei)), &c); err != nil ||
		c.Generation != 3 || c.LastBootstrap != 200 || c.TokenHash[0] != 8 {
		t.Errorf("credential after a new token %+v %v", c, err)
	}
}

// Removing a device drops its link state, credential and queued commands,
// and leaves another device's.
func TestRemoveDeviceDropsLinkState(t *testing.T) {
	f := newDeviceFixture(t)
	const other = "490154203237526"
	f.update(func(tx *store.Tx) error {
		return tx.AddDevice(&store.Device{IMEI: other, OrganizationID: f.org.ID, PartnerID: f.dev.PartnerID})
	})
	f.update(func(tx *store.Tx) error {
		for _, imei := range []string{f.dev.IMEI, other} {
			if err := tx.PutDeviceLink(&store.DeviceLink{IMEI: imei, Presence: store.PresenceOnline}); err != nil {
				return err
			}
			if err := tx.IssueDeviceToken(imei, bytes.Repeat([]byte{1}, 32), 1); err != nil {
				return err
			}
			for _, id := range []string{"a", "b"} {
				if err := tx.QueueCommand(&store.QueuedCommand{ID: id, IMEI: imei, Name: "reboot"}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	f.update(func(tx *store.Tx) error { return tx.RemoveDevice(f.dev.IMEI) })
	for _, bucket := range []string{"device_links", "device_credentials", "device_commands"} {
		if got := f.keys(bucket, []byte(f.dev.IMEI)); len(got) != 0 {
			t.Errorf("%s keeps %q of the removed device", bucket, got)
		}
		want := 1
		if bucket == "device_commands" {
			want = 2
		}
		if got := f.keys(bucket, []byte(other)); len(got) != want {
			t.Errorf("%s keeps %q of the other device, want %d keys", bucket, got, want)
		}
	}
}
