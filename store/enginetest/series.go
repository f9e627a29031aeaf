package enginetest

import (
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/fleetcam/fleetcam/store"
)

// OwnerCutoffs returns the cutoffs of a device whose ownerships are of the
// organizations orgs names (ownership → organization), each
// organization's records going before its time in cut, as the store's
// retention purge computes them. The store builds them from its own
// records and offers no constructor, so this sets the unexported fields,
// and fails when they are no longer what it expects.
func OwnerCutoffs(t *testing.T, cut store.Cutoffs, orgs map[int64]int64) *store.OwnerCutoffs {
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

// SeriesPurge is a store.SeriesPurge of the cutoffs of owners, by IMEI; a
// device absent from owners has none.
func SeriesPurge(owners map[string]*store.OwnerCutoffs, from []byte, limit int) store.SeriesPurge {
	return store.SeriesPurge{From: from, Limit: limit, Owners: func(imei string) (*store.OwnerCutoffs, error) {
		if oc, ok := owners[imei]; ok {
			return oc, nil
		}
		return &store.OwnerCutoffs{}, nil
	}}
}
