package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/pgtest"
)

// openPrepared returns an engine on a new database with the schema
// applied and the monthly partitions around now, as the store starts one.
func openPrepared(t testing.TB) *Engine {
	t.Helper()
	// A copy of a database prepared once per test binary: migrating a
	// new one takes seconds under -race, copying it a fraction of that.
	pgtest.Template(t, "prepared_template", func(url string) error {
		e, err := OpenEngine(context.Background(), url, Options{MaxConns: 2})
		if err != nil {
			return err
		}
		defer e.Close()
		return e.Prepare(context.Background())
	})
	e := openEngine(t, pgtest.Database(t, "prepared_template"))
	if err := e.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

// write runs fn in a read-write transaction and fails the test on its
// error.
func write(t testing.TB, e *Engine, fn func(*tx) error) {
	t.Helper()
	if err := e.update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// read runs fn in a read-only transaction and fails the test on its error.
func read(t testing.TB, e *Engine, fn func(*tx) error) {
	t.Helper()
	if err := e.view(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// seeder inserts the directory rows a group's tests refer to (partners,
// organizations, devices) through the engine's own records, so that every
// group starts from rows as the store writes them. Each row is created at
// at and goes in a transaction of its own; an error fails the test.
type seeder struct {
	t  testing.TB
	e  *Engine
	at time.Time
}

// partner inserts a partner named name.
func (s seeder) partner(name string) *store.Partner {
	s.t.Helper()
	p := &store.Partner{Name: name, CreatedAt: s.at}
	write(s.t, s.e, func(t *tx) error { return t.Partners().Insert(p) })
	return p
}

// organization inserts o, created at s.at, and returns it with its id.
func (s seeder) organization(o store.Organization) *store.Organization {
	s.t.Helper()
	o.CreatedAt = s.at
	write(s.t, s.e, func(t *tx) error { return t.Organizations().Insert(&o) })
	return &o
}

// device inserts d, activated and created at s.at.
func (s seeder) device(d store.Device) *store.Device {
	s.t.Helper()
	d.Status, d.CreatedAt = store.DeviceActivated, s.at
	write(s.t, s.e, func(t *tx) error { return t.Devices().Insert(&d) })
	return &d
}
