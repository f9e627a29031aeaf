package bolt_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	bbolt "go.etcd.io/bbolt"
)

// An audit entry is stored as JSON under its id, 8 bytes big-endian, from
// the bucket's sequence; entries an earlier version wrote are listed and
// purged with the new ones.
func TestAuditEntriesKeepTheirLayout(t *testing.T) {
	s := openWebhookStore(t)
	now := s.clock.Now()
	s.clock.Set(time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC))
	org := s.organization() // audits partner.create and organization.create: entries 1 and 2
	s.clock.Set(now)
	s.raw(func(btx *bbolt.Tx) error {
		b := btx.Bucket([]byte("audit"))
		if err := b.SetSequence(100); err != nil {
			return err
		}
		return b.Put(be8(100), fmt.Appendf(nil, `{"id":100,"time":"2026-02-01T00:00:00Z","organizationId":%d,`+
			`"action":"device.add","entityType":"device","entityId":"490154203237518","after":{"imei":"490154203237518"}}`, org))
	})
	s.update(func(tx *store.Tx) error {
		return tx.Audit(store.AuditChange{Action: "device.remove", EntityType: "device", EntityID: "490154203237518",
			OrganizationID: org, Before: map[string]string{"imei": "490154203237518"}})
	})
	s.raw(func(btx *bbolt.Tx) error {
		var e store.AuditEntry
		if err := json.Unmarshal(btx.Bucket([]byte("audit")).Get(be8(101)), &e); err != nil {
			t.Fatalf("entry 101: %v", err)
		}
		if e.ID != 101 || e.Action != "device.remove" || e.Source != "test" || string(e.Before) != `{"imei":"490154203237518"}` {
			t.Errorf("entry 101 is %+v", e)
		}
		return nil
	})
	entries, total, err := s.db.AuditLog(t.Context(), store.AuditFilter{EntityType: "device"}, store.Page{})
	if err != nil || total != 2 || entries[0].ID != 101 || entries[1].ID != 100 || string(entries[1].After) != `{"imei":"490154203237518"}` {
		t.Fatalf("device entries %+v of %d (%v), want 101 and the stored 100", entries, total, err)
	}

	// With purge days, the organization's entries of January and February
	// go (ids grow with time: the purge stops at the first recent one); the
	// one of today stays.
	s.update(func(tx *store.Tx) error {
		o, err := tx.Organization(org)
		if err != nil {
			return err
		}
		o.Retention.PurgeDays = 7
		return tx.UpdateOrganization(o)
	})
	res, err := s.db.Purge(t.Context(), s.clock.Now(), store.PurgeSettings{})
	if err != nil || res.Deleted["auditLogs"] != 2 {
		t.Fatalf("purged %v (%v), want the organization's entries 2 and 100", res.Deleted, err)
	}
	s.raw(func(btx *bbolt.Tx) error {
		b := btx.Bucket([]byte("audit"))
		for id, want := range map[int64]bool{1: true, 2: false, 100: false, 101: true} {
			if got := b.Get(be8(id)) != nil; got != want {
				t.Errorf("entry %d kept %v, want %v", id, got, want)
			}
		}
		return nil
	})
}
