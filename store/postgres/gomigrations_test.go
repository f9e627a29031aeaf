package postgres

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestFoldedNamesMigration: migration 00020 gives the drivers stored
// before it the store.FoldCase keys of their names, which the driver list
// then sorts by, and each device whose name_folded held bytes.ToLower's
// lower case the FoldCase key; undone, the drivers' keys go and the
// devices have the lower case again.
func TestFoldedNamesMigration(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	at := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	s := seeder{t, e, at}
	p := s.partner("Partner").ID
	org := s.organization(store.Organization{Name: "One", PartnerID: p, SSOSalt: []byte("salt")}).ID
	names := map[string]string{ // device name → its FoldCase key
		"Οδυσσευς van": "οδυσσευσ van", // final sigma, which lower case keeps
		"µ-Truck":      "μ-truck",      // micro sign, which lower case keeps
		"Émile's bus":  "émile's bus",  // the same key as lower case
	}
	var imeis []string
	for i, name := range slices.Sorted(maps.Keys(names)) {
		imeis = append(imeis, s.device(store.Device{IMEI: testIMEI(i + 1), Name: name, OrganizationID: org, PartnerID: p}).IMEI)
	}
	drivers := []*store.Driver{
		driver(org, 1, "ölaf", "ΟΔΥΣΣΕΥΣ", "", true, at),
		driver(org, 2, "Émile", "οδυσσευς", "", true, at),
		driver(org, 3, "Zoë", "Adams", "", true, at),
		driver(org, 4, "Ölaf", "Οδυσσευσ", "", true, at),
	}
	write(t, e, func(tx *tx) error {
		for _, d := range drivers {
			if err := tx.Drivers().Insert(d); err != nil {
				return err
			}
		}
		return nil
	})

	ctx := context.Background()
	pr, db, err := e.provider()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := pr.DownTo(ctx, 19); err != nil {
		t.Fatal(err)
	}
	deviceKeys := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		read(t, e, func(tx *tx) error {
			rows, err := tx.pg.Query(tx.ctx, `SELECT name, name_folded FROM devices`)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var name, folded string
				if err := rows.Scan(&name, &folded); err != nil {
					return err
				}
				out[name] = folded
			}
			return rows.Err()
		})
		return out
	}
	columns := func() []string {
		t.Helper()
		var cols []string
		read(t, e, func(tx *tx) error {
			rows, err := tx.pg.Query(tx.ctx, `SELECT column_name || ' ' || is_nullable FROM information_schema.columns
				WHERE table_name = 'drivers' AND column_name LIKE '%folded' ORDER BY 1`)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var c string
				if err := rows.Scan(&c); err != nil {
					return err
				}
				cols = append(cols, c)
			}
			return rows.Err()
		})
		return cols
	}
	if cols := columns(); len(cols) != 0 {
		t.Fatalf("before the migration the drivers have %v", cols)
	}
	for name, folded := range deviceKeys() {
		if want := string(bytes.ToLower([]byte(name))); folded != want {
			t.Errorf("before the migration %q has the key %q, want %q", name, folded, want)
		}
	}

	if _, err := pr.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if cols := columns(); !slices.Equal(cols, []string{"first_name_folded NO", "last_name_folded NO"}) {
		t.Fatalf("after the migration the drivers have %v", cols)
	}
	if got := deviceKeys(); !maps.Equal(got, names) {
		t.Errorf("after the migration the devices' keys are %q, want %q", got, names)
	}
	read(t, e, func(tx *tx) error {
		for _, d := range drivers {
			var first, last string
			if err := tx.pg.QueryRow(tx.ctx, `SELECT first_name_folded, last_name_folded FROM drivers WHERE id = $1`, d.ID).
				Scan(&first, &last); err != nil {
				return err
			}
			if first != store.FoldCase(d.FirstName) || last != store.FoldCase(d.LastName) {
				t.Errorf("driver %d (%s %s): keys %q %q", d.ID, d.FirstName, d.LastName, first, last)
			}
		}
		for _, tc := range []struct {
			key  string
			want []int64
		}{
			{store.DriverByFirstName, []int64{drivers[2].ID, drivers[1].ID, drivers[0].ID, drivers[3].ID}},
			{store.DriverByLastName, []int64{drivers[2].ID, drivers[0].ID, drivers[1].ID, drivers[3].ID}},
		} {
			got, _, err := tx.Drivers().List(store.DriverFilter{}, store.Sort{Key: tc.key}, store.Page{})
			if err != nil {
				return err
			}
			var ids []int64
			for _, d := range got {
				ids = append(ids, d.ID)
			}
			if !slices.Equal(ids, tc.want) {
				t.Errorf("drivers by %s after the migration: %v, want %v", tc.key, ids, tc.want)
			}
		}
		found, _, err := tx.Devices().List(store.DeviceFilter{OrganizationID: org, Name: "ΟΔΥΣΣΕΥΣ"}, store.Page{})
		if err != nil || len(found) != 1 || found[0].IMEI != imeis[slices.Index(slices.Sorted(maps.Keys(names)), "Οδυσσευς van")] {
			t.Errorf("devices named like ΟΔΥΣΣΕΥΣ after the migration: %v, %v", found, err)
		}
		return nil
	})
}
