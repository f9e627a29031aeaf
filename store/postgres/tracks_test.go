package postgres

import (
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/fleetcam/fleetcam/store"
)

// trackNow is the time the tests of the tracks group run at: the
// partitions of gps_samples are those around it.
var trackNow = time.Date(2026, 3, 15, 9, 0, 0, 0, time.UTC)

// trackEngine returns an engine on a new database with the schema applied
// and the partitions of gps_samples around trackNow.
func trackEngine(t *testing.T) *Engine {
	t.Helper()
	e := openPrepared(t)
	ensureAround(t, e, trackNow, "gps_samples")
	return e
}

// tracksFixture is the directory seedTracks inserts: organizations A and
// B of one partner, and devices of each.
type tracksFixture struct {
	orgA, orgB int64
	// imeis are devices 0 and 1 of A, 2 of B.
	imeis []string
}

// seedTracks inserts the directory rows the tracks refer to.
func seedTracks(t *testing.T, e *Engine) tracksFixture {
	t.Helper()
	s := seeder{t, e, trackNow}
	partner := s.partner("P").ID
	org := func(name string) int64 {
		return s.organization(store.Organization{Name: name, PartnerID: partner, Retention: store.Retention{PurgeDays: 31}}).ID
	}
	f := tracksFixture{orgA: org("A"), orgB: org("B")}
	for i, o := range []int64{f.orgA, f.orgA, f.orgB} {
		imei := "35100000000000" + string(rune('0'+i))
		s.device(store.Device{IMEI: imei, OrganizationID: o, PartnerID: partner, Ownership: int64(i + 1)})
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
		write(t, e, func(r *tx) error {
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
