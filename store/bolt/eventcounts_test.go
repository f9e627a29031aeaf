package bolt_test

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/fleetcam/fleetcam/store"
	boltstore "github.com/fleetcam/fleetcam/store/bolt"
)

// The hourly counts answer every organization query exactly as walking
// the index does: windows on and off hour boundaries, partner and type
// filters, pages before, inside and after the events, and after deletes.
func TestOrgEventsByHourMatchesTheWalk(t *testing.T) {
	e := openEventEngine(t, filepath.Join(t.TempDir(), "fleetcam.db"))
	rnd := rand.New(rand.NewPCG(7, 11))
	types := []string{"deceleration", "button", "cellPhoneUseBeep"}
	devs := []struct {
		imei    string
		partner int64
	}{{"352045100000011", 3}, {"352045100000029", 3}, {"352045100000037", 4}}
	t0 := eventT0.Truncate(time.Hour)
	var stored []*store.Event
	eventUpdate(t, e, func(rec store.Records) error {
		for i := range 3000 {
			at := t0.Add(time.Duration(rnd.Int64N(int64(30 * time.Hour))))
			if i%50 == 0 {
				at = t0.Add(time.Duration(rnd.IntN(30)) * time.Hour) // exactly on an hour
			}
			org := eventOrg
			if i%100 == 99 {
				org = eventOrg + 1 // the neighbour's events are no one else's
			}
			d := devs[i%3]
			ev := &store.Event{IMEI: d.imei, OrganizationID: org, PartnerID: d.partner, Type: types[rnd.IntN(len(types))],
				Time: at, Severity: store.SeverityMedium, Status: store.EventStatusNew, CreatedAt: eventT0}
			if err := rec.Events().Insert(ev); err != nil {
				return err
			}
			stored = append(stored, ev)
		}
		return nil
	})
	check := func(round int) {
		t.Helper()
		err := e.View(t.Context(), func(rec store.Records) error {
			for range 300 {
				start := t0.Add(time.Duration(rnd.Int64N(int64(32*time.Hour))) - time.Hour)
				if rnd.IntN(4) == 0 {
					start = start.Truncate(time.Hour)
				}
				end := start.Add(time.Duration(rnd.Int64N(int64(20 * time.Hour))))
				if rnd.IntN(4) == 0 {
					end = end.Truncate(time.Hour).Add(-time.Millisecond)
				}
				f := store.OrgEventFilter{Start: start, End: end}
				if rnd.IntN(2) == 0 {
					f.PartnerID = 3
				}
				if rnd.IntN(3) == 0 {
					f.Types = map[string]bool{types[rnd.IntN(len(types))]: true}
				}
				p := store.Page{Limit: 1 + rnd.IntN(150), Offset: rnd.IntN(400)}
				got, gotN, err := rec.Events().ByOrganization(eventOrg, f, p)
				if err != nil {
					return err
				}
				want, wantN, err := boltstore.WalkOrgEvents(rec, eventOrg, f, p)
				if err != nil {
					return err
				}
				if gotN != wantN || !slices.Equal(ids(got), ids(want)) {
					t.Fatalf("round %d, %s to %s, partner %d, types %v, page %+v: %d events %v, the walk finds %d %v",
						round, start, end, f.PartnerID, f.Types, p, gotN, ids(got), wantN, ids(want))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check(1)
	// Deleting and purging keep the counts in step.
	eventUpdate(t, e, func(rec store.Records) error {
		for _, ev := range stored[:200] {
			if err := rec.Events().Delete(ev); err != nil {
				return err
			}
		}
		doomed, err := rec.Events().ByOrganizationBefore(eventOrg, t0.Add(5*time.Hour), 500)
		if err != nil {
			return err
		}
		if len(doomed) == 0 {
			t.Error("nothing to purge")
		}
		for i := range doomed {
			if err := rec.Events().Delete(&doomed[i]); err != nil {
				return err
			}
		}
		return nil
	})
	check(2)
}

// A store written before the hourly counts existed gets them when opened.
func TestEventHoursBackfilledOnOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fleetcam.db")
	e := openEventEngine(t, path)
	eventUpdate(t, e, func(rec store.Records) error {
		for i := range 500 {
			ev := &store.Event{IMEI: eventIMEI, OrganizationID: eventOrg, PartnerID: eventOwner, Type: "button",
				Time: eventT0.Add(time.Duration(i) * 7 * time.Minute), Status: store.EventStatusNew}
			if err := rec.Events().Insert(ev); err != nil {
				return err
			}
		}
		return nil
	})
	// As an older version left it: no counts, no schema version.
	eventBolt(t, e, func(btx *bbolt.Tx) error {
		if err := btx.DeleteBucket([]byte("org_event_hours")); err != nil {
			return err
		}
		meta := btx.Bucket([]byte("meta"))
		if err := meta.Delete([]byte("org_event_hours")); err != nil {
			return err
		}
		return meta.Delete([]byte("schema_version"))
	})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEventEngine(t, path)
	f := store.OrgEventFilter{Start: eventT0.Add(time.Hour), End: eventT0.Add(40 * time.Hour)}
	var total int
	err := e.View(t.Context(), func(rec store.Records) error {
		got, n, err := rec.Events().ByOrganization(eventOrg, f, store.Page{Limit: 10, Offset: 20})
		if err != nil {
			return err
		}
		want, wantN, err := boltstore.WalkOrgEvents(rec, eventOrg, f, store.Page{Limit: 10, Offset: 20})
		if err != nil {
			return err
		}
		if n != wantN || n < 300 || !slices.Equal(ids(got), ids(want)) {
			t.Fatalf("after the backfill: %d events %v, the walk finds %d %v", n, ids(got), wantN, ids(want))
		}
		total = n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Once complete, the counts are not counted again.
	eventUpdate(t, e, func(rec store.Records) error { return rec.Events().BackfillHourlyCounts() })
	err = e.View(t.Context(), func(rec store.Records) error {
		_, n, err := rec.Events().ByOrganization(eventOrg, f, store.Page{Limit: 10, Offset: 20})
		if err == nil && n != total {
			t.Errorf("after a second backfill the window counts %d, want %d", n, total)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
