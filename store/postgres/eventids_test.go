package postgres

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/pgtest"
)

// TestEventIDsDrawnAhead: after a transaction that asked for two event
// ids, the next read-ahead of a batch of three draws three with its other
// reads, and an event given one costs no round trip of its own: its INSERT
// goes with the commit.
func TestEventIDsDrawnAhead(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	var ids []int64
	write(t, e, func(r *tx) error {
		// The first events find no id drawn ahead and return their own.
		for i := range 2 {
			ev := newEvent(f.imeis[0], "distractedDriving", time.Duration(i)*time.Second)
			ev.OrganizationID = f.orgA
			if err := r.Events().Insert(ev); err != nil {
				return err
			}
			ids = append(ids, ev.ID)
		}
		return nil
	})
	write(t, e, func(r *tx) error {
		if err := r.Prefetch(store.ReadAhead{IMEIs: []string{f.imeis[0], f.imeis[1], f.imeis[0]}, Now: trackNow}); err != nil {
			return err
		}
		p := pipeOf(r)
		trips := p.trips
		for i := range 3 {
			ev := newEvent(f.imeis[i%2], "distractedDriving", time.Duration(i+2)*time.Second)
			ev.OrganizationID = f.orgA
			if i == 2 {
				ev.Files = []store.EventFile{{CameraID: 1, FileID: "clip", FileType: "video"}}
			}
			if err := r.Events().Insert(ev); err != nil {
				return err
			}
			ids = append(ids, ev.ID)
		}
		if p.trips != trips {
			t.Errorf("3 events with ids drawn ahead took %d round trips, want none before the commit", p.trips-trips)
		}
		return nil
	})
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) || ids[0] == 0 {
		t.Fatalf("event ids %v, want unique and rising", ids)
	}
	read(t, e, func(r *tx) error {
		for n, id := range ids {
			ev, err := r.Events().Get(id)
			if err != nil {
				return fmt.Errorf("event %d (id %d): %w", n, id, err)
			}
			if want := eventT0.Add(time.Duration(n) * time.Second); !ev.Time.Equal(want) || len(ev.Files) != n/4 {
				t.Errorf("event %d: at %v with files %+v; want at %v", id, ev.Time, ev.Files, want)
			}
		}
		return nil
	})
}

// TestViewReadsAheadWithoutDrawing: a view that reads devices ahead while
// event ids are asked for (as the offline alarms' scan of every device
// does beside the group commits) reads them and draws no ids, which its
// read-only transaction could not; the next writing read-ahead draws.
func TestViewReadsAheadWithoutDrawing(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	e.demand.asked.Store(2)
	read(t, e, func(r *tx) error {
		if err := r.Prefetch(store.ReadAhead{IMEIs: f.imeis, Now: trackNow}); err != nil {
			return err
		}
		if len(r.eventIDs) != 0 {
			t.Errorf("a view drew event ids %v", r.eventIDs)
		}
		_, err := r.Devices().Get(f.imeis[0])
		return err
	})
	write(t, e, func(r *tx) error {
		if err := r.Prefetch(store.ReadAhead{IMEIs: f.imeis[:2], Now: trackNow}); err != nil {
			return err
		}
		if len(r.eventIDs) != 2 {
			t.Errorf("a writing read-ahead after the view drew %d event ids, want 2", len(r.eventIDs))
		}
		return nil
	})
}

// TestGroupCommitEventIDs: events ingested through group commits, the
// first drawing their ids one by one and the later ones ahead, get unique
// ids that rise in the order ingested, and each event with its file and
// its device event id is stored under its id.
func TestGroupCommitEventIDs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	_, db, devs := fleetOf(t, 9, now)
	seq := 0
	// batch ingests an event of each of devs in one group commit and
	// returns the events' ids.
	batch := func(devs []*store.Device) []int64 {
		t.Helper()
		c := db.NewCommitter(store.CommitterOptions{MaxBatch: len(devs), Delay: time.Hour})
		defer c.Close()
		ids := make([]int64, len(devs))
		var done []<-chan error
		for i, d := range devs {
			seq++
			in := store.EventInput{DeviceEventID: fmt.Sprintf("ev-%d", seq), Type: "distractedDriving",
				Time: now.Add(-time.Duration(seq) * time.Second), Lat: 50, Lon: 4,
				Files: []store.EventFile{{CameraID: 1, FileID: fmt.Sprint(seq), FileType: "video"}}}
			done = append(done, c.Submit(ctx, store.Actor{Source: "device", IMEI: d.IMEI}, func(tx *store.Tx) error {
				r, err := tx.IngestEvent(d, in)
				if err == nil && r.Event != nil {
					ids[i] = r.Event.ID
				}
				return err
			}))
		}
		for i, ch := range done {
			if err := <-ch; err != nil {
				t.Fatalf("event of device %d: %v", i, err)
			}
		}
		return ids
	}
	var all []int64
	for _, n := range []int{3, 3, 9, 9} {
		all = append(all, batch(devs[:n])...)
	}
	if !slices.IsSorted(all) || len(slices.Compact(slices.Clone(all))) != len(all) || all[0] == 0 {
		t.Errorf("event ids %v, want unique and rising", all)
	}
	err := db.View(ctx, func(tx *store.Tx) error {
		for n, id := range all {
			ev, err := tx.Event(id)
			if err != nil {
				return fmt.Errorf("event %d (id %d): %w", n, id, err)
			}
			if want := fmt.Sprintf("ev-%d", n+1); ev.DeviceEventID != want || len(ev.Files) != 1 || ev.Files[0].FileID != fmt.Sprint(n+1) {
				t.Errorf("event %d: device event id %q, files %+v; want %q with its file", id, ev.DeviceEventID, ev.Files, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEventIDsRiseAcrossNodes: two nodes store a device's events in turn,
// each drawing ids ahead in its group commits; every event gets a greater
// id than the one stored before it, whichever node stored either, since
// a transaction keeps none of its ids for the next.
func TestEventIDsRiseAcrossNodes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.Database(t, "")
	nodes := []*Engine{openEngine(t, url), openEngine(t, url)}
	if err := nodes[0].Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	ensureAround(t, nodes[0], eventT0, "events")
	f := seedTracks(t, nodes[0])
	imei := f.imeis[0]
	var ids []int64
	store1 := func(e *Engine, n int) {
		t.Helper()
		err := e.UpdateBatch(ctx, func(rec store.Records) error {
			r := rec.(*tx)
			if err := r.Prefetch(store.ReadAhead{IMEIs: []string{imei, imei, imei, imei}, Now: eventT0}); err != nil {
				return err
			}
			ev := newEvent(imei, "distractedDriving", time.Duration(n)*time.Second)
			ev.OrganizationID = f.orgA
			if err := r.Events().Insert(ev); err != nil {
				return err
			}
			ids = append(ids, ev.ID)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for n, node := range []int{0, 0, 1, 1, 0, 1, 0, 0, 1} {
		store1(nodes[node], n)
	}
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Errorf("ids of the device's events in the order stored: %v, want rising", ids)
	}
}
