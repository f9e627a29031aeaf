package postgres

import (
	"context"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/pgtest"
)

// trackNow is the time the tests of the tracks group run at: the
// partitions of gps_samples are those around it.
var trackNow = time.Date(2026, 3, 15, 9, 0, 0, 0, time.UTC)

// trackEngine returns an engine on a new database with the schema applied
// and the partitions of gps_samples around trackNow.
func trackEngine(t *testing.T) *Engine {
	t.Helper()
	e := openEngine(t, pgtest.Database(t, ""))
	ctx := context.Background()
	if err := e.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	dropMonthPartitions(t, e)
	if err := ensureTrackPartitions(ctx, e, trackNow); err != nil {
		t.Fatal(err)
	}
	return e
}

// trackWrite runs fn in a read-write transaction and fails the test on its
// error.
func trackWrite(t *testing.T, e *Engine, fn func(*tx) error) {
	t.Helper()
	if err := e.update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// trackRead runs fn in a read-only transaction and fails the test on its
// error.
func trackRead(t *testing.T, e *Engine, fn func(*tx) error) {
	t.Helper()
	if err := e.view(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// tracksFixture is the directory seedTracks inserts: organizations A and
// B of one partner, and devices of each.
type tracksFixture struct {
	orgA, orgB int64
	// imeis are devices 0 and 1 of A, 2 of B.
	imeis []string
}

// seedTracks inserts the directory rows the tracks refer to with plain SQL.
func seedTracks(t *testing.T, e *Engine) tracksFixture {
	t.Helper()
	ctx := context.Background()
	one := func(sql string, args ...any) int64 {
		t.Helper()
		var id int64
		if err := e.pool.QueryRow(ctx, sql, args...).Scan(&id); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return id
	}
	partner := one(`INSERT INTO partners (name, created_at) VALUES ('P', $1) RETURNING id`, trackNow)
	org := func(name string) int64 {
		return one(`INSERT INTO organizations (name, partner_id, is_organization_profile_enabled, exclusive_partner_only,
				purge_days, purge_days_front_camera, purge_days_rear_camera, purge_days_auxiliary_cameras,
				device_retention_minutes, live_video_timeout_seconds, default_data_profile_id, created_at)
			VALUES ($1, $2, false, false, 31, 0, 0, 0, 0, 0, 0, $3) RETURNING id`, name, partner, trackNow)
	}
	f := tracksFixture{orgA: org("A"), orgB: org("B")}
	for i, o := range []int64{f.orgA, f.orgA, f.orgB} {
		imei := "35100000000000" + string(rune('0'+i))
		if _, err := e.pool.Exec(ctx, `INSERT INTO devices (imei, name, name_folded, organization_id, partner_id,
				status, product_type, data_profile_id, created_at, ownership)
			VALUES ($1, '', '', $2, $3, 'activated', '', 0, $4, $5)`, imei, o, partner, trackNow, i+1); err != nil {
			t.Fatal(err)
		}
		f.imeis = append(f.imeis, imei)
	}
	return f
}

// ownerCutoffs returns the cutoffs of a device whose ownerships are of the
// organizations orgs names, each organization's records going before its
// time in cut, as the store's retention purge computes them. The store
// builds them from its own records and offers no constructor, so this
// sets the unexported fields, and fails when they are no longer what it
// expects.
func ownerCutoffs(t *testing.T, cut store.Cutoffs, orgs map[int64]int64) *store.OwnerCutoffs {
	t.Helper()
	var latest time.Time
	for _, org := range orgs {
		if c, ok := cut[org]; ok && c.After(latest) {
			latest = c
		}
	}
	oc := new(store.OwnerCutoffs)
	v := reflect.ValueOf(oc).Elem()
	for name, x := range map[string]any{"cut": cut, "orgs": orgs, "latest": latest} {
		f := v.FieldByName(name)
		if !f.IsValid() || f.Type() != reflect.TypeOf(x) {
			t.Fatalf("store.OwnerCutoffs has no field %s of %T", name, x)
		}
		reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(x))
	}
	if !oc.Latest().Equal(latest) {
		t.Fatalf("store.OwnerCutoffs.Latest is %s; want %s", oc.Latest(), latest)
	}
	return oc
}

// seriesPurge is a store.SeriesPurge of the cutoffs of owners, by IMEI;
// a device absent from owners has none.
func seriesPurge(owners map[string]*store.OwnerCutoffs, from []byte, limit int) store.SeriesPurge {
	return store.SeriesPurge{From: from, Limit: limit, Owners: func(imei string) (*store.OwnerCutoffs, error) {
		if oc, ok := owners[imei]; ok {
			return oc, nil
		}
		return &store.OwnerCutoffs{}, nil
	}}
}

// purgeAll runs purge in batches of limit until it ends, each in its own
// transaction, checking that no batch deletes more than limit, and returns
// how many it deleted and in how many batches.
func purgeAll(t *testing.T, e *Engine, limit int, purge func(*tx, []byte) (int, []byte, error)) (deleted, batches int) {
	t.Helper()
	var from []byte
	for {
		var n int
		trackWrite(t, e, func(r *tx) error {
			var err error
			n, from, err = purge(r, from)
			return err
		})
		batches++
		deleted += n
		if limit > 0 && n > limit {
			t.Fatalf("a batch of limit %d deleted %d", limit, n)
		}
		if from == nil {
			return deleted, batches
		}
		if batches > 1000 {
			t.Fatal("the purge does not end")
		}
	}
}
