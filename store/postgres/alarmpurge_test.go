package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestAlarmPurge purges in batches of three and compares what goes with
// AlarmPurge.Due: closed alarms of an organization with a cutoff, created
// before it to the nanosecond. Their notes and open records go with them;
// their triples stay.
func TestAlarmPurge(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	fx := seedAlarms(t, e)
	all := seedAlarmList(t, e, fx)
	ctx := context.Background()
	// Alarm 30 is a closed alarm of org: a cutoff at its createdAt keeps
	// it, one a nanosecond later does not.
	edge := all[30]
	cut := edge.CreatedAt.Add(time.Nanosecond)
	purge := store.AlarmPurge{Cutoffs: store.Cutoffs{fx.org: cut}, Limit: 3}
	want := map[int64]bool{}
	closedRecorded := int64(0)
	for _, a := range all {
		if purge.Due(&a) {
			want[a.ID] = true
			closedRecorded = a.ID
		}
	}
	if len(want) < 4 || !want[edge.ID] {
		t.Fatalf("%d alarms are due, alarm %d among them: %v; the test wants it and several batches", len(want), edge.ID, want[edge.ID])
	}
	undo := errors.New("undo")
	err := e.update(ctx, func(r *tx) error {
		if _, _, err := r.Alarms().Purge(store.AlarmPurge{Cutoffs: store.Cutoffs{fx.org: edge.CreatedAt}}); err != nil {
			return err
		}
		if _, err := r.Alarms().Get(edge.ID); err != nil {
			t.Errorf("a purge with the cutoff at its createdAt deleted alarm %d: %v", edge.ID, err)
		}
		return undo
	})
	if !errors.Is(err, undo) {
		t.Fatal(err)
	}
	var batches, purged int
	var from []byte
	for {
		var n int
		write(t, e, func(r *tx) error {
			var err error
			n, from, err = r.Alarms().Purge(store.AlarmPurge{Cutoffs: purge.Cutoffs, From: from, Limit: purge.Limit})
			return err
		})
		batches++
		purged += n
		if n > purge.Limit {
			t.Fatalf("a batch of limit %d deleted %d", purge.Limit, n)
		}
		if from == nil {
			break
		}
		if batches > len(all) {
			t.Fatal("the purge does not end")
		}
	}
	if purged != len(want) || batches < len(want)/3 {
		t.Errorf("purged %d alarms in %d batches; want %d in batches of 3", purged, batches, len(want))
	}
	read(t, e, func(r *tx) error {
		for _, a := range all {
			_, err := r.Alarms().Get(a.ID)
			if gone := errors.Is(err, store.ErrNotFound); gone != want[a.ID] {
				t.Errorf("alarm %d (org %d, open %v, created %s): gone %v (%v); want %v", a.ID, a.OrganizationID, a.Open,
					a.CreatedAt.Format(time.RFC3339Nano), gone, err, want[a.ID])
			}
			if taken, err := r.Alarms().TripleTaken(a.IMEI, a.AlarmDefinitionID, a.CreatedAt); err != nil || !taken {
				t.Errorf("the triple of alarm %d is free after the purge (%v)", a.ID, err)
			}
		}
		if id, err := r.OpenAlarms().Get(all[0].IMEI, store.AlarmDeviceOffline); err != nil || id == closedRecorded {
			t.Errorf("the open record of a purged alarm: %d, %v; want it gone", id, err)
		}
		return nil
	})
	var orphans int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM alarm_notes n WHERE NOT EXISTS (SELECT FROM alarms a WHERE a.id = n.alarm_id)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Errorf("%d notes of purged alarms remain (%v)", orphans, err)
	}

	// Nothing is due: no cutoff, or a cutoff before every alarm; no limit
	// deletes every due alarm at once.
	write(t, e, func(r *tx) error {
		for _, p := range []store.AlarmPurge{{Limit: 10}, {Cutoffs: store.Cutoffs{fx.org2: time.Unix(0, 0)}, Limit: 10}} {
			if n, next, err := r.Alarms().Purge(p); err != nil || n != 0 || next != nil {
				t.Errorf("Purge(%+v) = %d, %x, %v; want nothing", p, n, next, err)
			}
		}
		n, next, err := r.Alarms().Purge(store.AlarmPurge{Cutoffs: store.Cutoffs{fx.org2: cut.Add(time.Hour)}})
		if err != nil || n == 0 || next != nil {
			t.Errorf("Purge without a limit = %d, %x, %v; want every due alarm of org2 at once", n, next, err)
		}
		return nil
	})
	err = e.update(ctx, func(r *tx) error {
		_, _, err := r.Alarms().Purge(store.AlarmPurge{Cutoffs: purge.Cutoffs, From: []byte("x"), Limit: 3})
		return err
	})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Purge from a malformed position: %v; want ErrInvalid", err)
	}
}
