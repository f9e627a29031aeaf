package store

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// walkOrgEvents answers an organization query the slow way, walking every
// index entry of its window.
func walkOrgEvents(tx *Tx, org int64, q EventQuery, p Page) ([]Event, int, error) {
	q.IMEIs = map[string]bool{} // never nil: forces the walk
	all := q
	all.IMEIs = nil
	from := orgEventKey(org, q.Start, 0)
	to := append(orgEventKey(org, q.End, 0)[:16], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	partner := itob(q.PartnerID)
	match := func(_, v []byte) bool {
		if q.PartnerID != 0 && string(v[:8]) != string(partner) {
			return false
		}
		typ := v[8:]
		typ = typ[slices.Index(typ, 0)+1:]
		return q.Types == nil || q.Types[string(typ)]
	}
	return tx.walkEvents(bucketOrgEvents, from, to, match, "", p)
}

func eventIDs(es []Event) []int64 {
	var ids []int64
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	return ids
}

// The hourly counts answer every organization query exactly as walking
// the index does: windows on and off hour boundaries, partner and type
// filters, pages before, inside and after the events, and after deletes.
func TestOrgEventsByHourMatchesTheWalk(t *testing.T) {
	f := newEventFixture(t)
	rnd := rand.New(rand.NewPCG(7, 11))
	types := []string{EventDeceleration, EventButton, EventCellPhoneUseBeep}
	devs := []*Device{f.dev, f.dev2, f.foreign}
	t0 := eventT0.Truncate(time.Hour)
	var ids []int64
	f.update(func(tx *Tx) error {
		for i := range 3000 {
			at := t0.Add(time.Duration(rnd.Int64N(int64(30 * time.Hour))))
			if i%50 == 0 {
				at = t0.Add(time.Duration(rnd.IntN(30)) * time.Hour) // exactly on an hour
			}
			e := &Event{IMEI: devs[i%3].IMEI, OrganizationID: f.org.ID, PartnerID: devs[i%3].PartnerID,
				Type: types[rnd.IntN(len(types))], Time: at, Severity: SeverityMedium, Status: EventStatusNew}
			if err := tx.storeEvent(e); err != nil {
				return err
			}
			ids = append(ids, e.ID)
		}
		return nil
	})
	check := func(round int) {
		t.Helper()
		for range 300 {
			start := t0.Add(time.Duration(rnd.Int64N(int64(32*time.Hour))) - time.Hour)
			if rnd.IntN(4) == 0 {
				start = start.Truncate(time.Hour)
			}
			end := start.Add(time.Duration(rnd.Int64N(int64(20 * time.Hour))))
			if rnd.IntN(4) == 0 {
				end = end.Truncate(time.Hour).Add(-time.Millisecond)
			}
			q := EventQuery{Start: start, End: end}
			if rnd.IntN(2) == 0 {
				q.PartnerID = f.partner
			}
			if rnd.IntN(3) == 0 {
				q.Types = map[string]bool{types[rnd.IntN(len(types))]: true}
			}
			p := Page{Limit: 1 + rnd.IntN(150), Offset: rnd.IntN(400)}
			err := f.db.View(func(tx *Tx) error {
				got, gotN, err := tx.OrgEvents(f.org.ID, q, p)
				if err != nil {
					return err
				}
				want, wantN, err := walkOrgEvents(tx, f.org.ID, q, p)
				if err != nil {
					return err
				}
				if gotN != wantN || !slices.Equal(eventIDs(got), eventIDs(want)) {
					t.Fatalf("round %d, %s to %s, partner %d, types %v, page %+v: %d events %v, the walk finds %d %v",
						round, start, end, q.PartnerID, q.Types, p, gotN, eventIDs(got), wantN, eventIDs(want))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	check(1)
	// Deleting and purging keep the counts in step.
	f.update(func(tx *Tx) error {
		for _, id := range ids[:200] {
			if _, err := tx.DeleteEvent(id); err != nil {
				return err
			}
		}
		_, err := tx.PurgeEvents(f.org.ID, t0.Add(5*time.Hour), 500)
		return err
	})
	check(2)
}

// A store written before the hourly counts existed gets them when opened.
func TestEventHoursBackfilledOnOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fleetcam.db")
	db, err := Open(path, Options{Now: func() time.Time { return eventT0 }})
	if err != nil {
		t.Fatal(err)
	}
	var org int64
	err = db.Update(Actor{Source: "test"}, func(tx *Tx) error {
		p, err := tx.CreatePartner("P")
		if err != nil {
			return err
		}
		o, err := tx.CreateOrganization(p.ID, "Fleet", nil)
		if err != nil {
			return err
		}
		org = o.ID
		d := &Device{IMEI: eventIMEI(1), OrganizationID: o.ID, PartnerID: p.ID}
		if err := tx.AddDevice(d); err != nil {
			return err
		}
		for i := range 500 {
			e := &Event{IMEI: d.IMEI, OrganizationID: o.ID, PartnerID: p.ID, Type: EventButton,
				Time: eventT0.Add(time.Duration(i) * 7 * time.Minute), Status: EventStatusNew}
			if err := tx.storeEvent(e); err != nil {
				return err
			}
		}
		// As an older version left it: no counts, no schema version.
		if err := tx.tx.DeleteBucket(bucketOrgEventHours); err != nil {
			return err
		}
		if err := tx.bucket(bucketMeta).Delete(keyEventHours); err != nil {
			return err
		}
		return tx.bucket(bucketMeta).Delete(keySchemaVersion)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err = Open(path, Options{Now: func() time.Time { return eventT0 }}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := EventQuery{Start: eventT0.Add(time.Hour), End: eventT0.Add(40 * time.Hour)}
	err = db.View(func(tx *Tx) error {
		got, n, err := tx.OrgEvents(org, q, Page{Limit: 10, Offset: 20})
		if err != nil {
			return err
		}
		want, wantN, err := walkOrgEvents(tx, org, q, Page{Limit: 10, Offset: 20})
		if err != nil {
			return err
		}
		if n != wantN || n < 300 || !slices.Equal(eventIDs(got), eventIDs(want)) {
			t.Fatalf("after the backfill: %d events %v, the walk finds %d %v", n, eventIDs(got), wantN, eventIDs(want))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
