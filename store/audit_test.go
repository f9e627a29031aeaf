package store_test

import (
	"errors"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func TestAuditInTransaction(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db, clock := openTest(t)
		pid, oid := seed(t, db)
		actor := Actor{UserID: 7, Email: "ops@example.com", PartnerID: pid, Source: "api", RequestID: "req-1"}
		clock.Advance(time.Hour)
		err := db.Update(t.Context(), actor, func(tx *Tx) error {
			o, _ := tx.Organization(oid)
			o.Name = "Renamed"
			return tx.UpdateOrganization(o)
		})
		if err != nil {
			t.Fatal(err)
		}
		// A failing transaction leaves neither its change nor its audit entry.
		boom := errors.New("boom")
		err = db.Update(t.Context(), actor, func(tx *Tx) error {
			if _, err := tx.CreateGroup(oid, "Ghost"); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		entries, total, err := db.AuditLog(t.Context(), AuditFilter{}, Page{})
		if err != nil || total != 3 {
			t.Fatalf("%d entries, %v", total, err)
		}
		e := entries[0]
		if e.Action != "organization.update" || e.UserID != 7 || e.UserEmail != "ops@example.com" || e.RequestID != "req-1" ||
			e.OrganizationID != oid || e.PartnerID != pid || !e.Time.Equal(clock.Now()) ||
			string(e.Before) == "" || string(e.After) == "" {
			t.Fatalf("entry %+v", e)
		}
		if entries[1].Action != "organization.create" || entries[2].Action != "partner.create" {
			t.Fatalf("not newest first: %v, %v", entries[1].Action, entries[2].Action)
		}

		for _, tc := range []struct {
			name string
			f    AuditFilter
			want int
		}{
			{"by action", AuditFilter{Action: "organization.update"}, 1},
			{"by user", AuditFilter{UserID: 7}, 1},
			{"by organization", AuditFilter{OrganizationID: oid}, 2},
			{"by entity", AuditFilter{EntityType: "partner"}, 1},
			{"since", AuditFilter{Start: clock.Now().Add(-time.Minute)}, 1},
			{"until", AuditFilter{End: clock.Now().Add(-time.Minute)}, 2},
			{"other partner", AuditFilter{PartnerID: pid + 1}, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if _, n, _ := db.AuditLog(t.Context(), tc.f, Page{}); n != tc.want {
					t.Fatalf("%d entries, want %d", n, tc.want)
				}
			})
		}
		page, n, _ := db.AuditLog(t.Context(), AuditFilter{}, Page{Limit: 1, Offset: 1})
		if n != 3 || len(page) != 1 || page[0].Action != "organization.create" {
			t.Fatalf("page %+v of %d", page, n)
		}
	})
}

// BenchmarkAudit appends audit entries, as every write of the store does,
// a thousand to a transaction so that the commit does not hide their cost.
func BenchmarkAudit(b *testing.B) {
	f := newEventFixture(b)
	c := AuditChange{Action: "device.update", EntityType: "device", EntityID: f.dev.IMEI,
		OrganizationID: f.org.ID, Before: f.dev, After: f.dev}
	b.ReportAllocs()
	b.ResetTimer()
	for lo := 0; lo < b.N; lo += 1000 {
		f.update(func(tx *Tx) error {
			for range min(1000, b.N-lo) {
				if err := tx.Audit(c); err != nil {
					return err
				}
			}
			return nil
		})
	}
}
