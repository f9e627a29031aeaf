package postgres

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestReadAlongTravelsWithTheNextRead: the organizations and devices a
// transaction names with ReadAlong are read in the round trip of its next
// statement, and their Get methods then answer from the memo without one,
// the rows as a Get of its own reads them, one that is not there
// ErrNotFound; a row the transaction already read is not read again, and
// rows go after the writes queued before them, so that they show them.
func TestReadAlongTravelsWithTheNextRead(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	s := seeder{t, e, time.Now().UTC().Truncate(time.Microsecond)}
	p := s.partner("Partner")
	o := s.organization(store.Organization{Name: "Fleet", PartnerID: p.ID, PartnerIDs: []int64{p.ID}, SSOSalt: []byte{1, 2}})
	d := s.device(store.Device{IMEI: "356000000000071", Name: "Van 7", OrganizationID: o.ID, PartnerID: p.ID})
	u := &store.User{Email: "ops@fleet.example", PartnerID: p.ID, AccessLevel: "editor", CreatedAt: s.at}
	write(t, e, func(tx *tx) error { return tx.Users().Insert(u) })

	// want reads organization id and device imei on their own, in a
	// transaction of their own, as the rows ReadAlong must give.
	type rows struct {
		org    *store.Organization
		device *store.Device
	}
	want := rows{}
	read(t, e, func(tx *tx) error {
		var err error
		if want.org, err = tx.Organizations().Get(o.ID); err != nil {
			return err
		}
		want.device, err = tx.Devices().Get(d.IMEI)
		return err
	})

	read(t, e, func(tx *tx) error {
		tx.ReadAlong(store.AlongReads{Organizations: []int64{o.ID, o.ID + 100}, Devices: []string{d.IMEI, "356000000000099"}})
		if got, err := tx.Users().Get(u.ID); err != nil || got.Email != u.Email {
			t.Fatalf("the user read with rows along: %+v, %v", got, err)
		}
		trips := pipeOf(tx).trips
		if trips != 1 {
			t.Errorf("the user and the rows along took %d round trips, want 1", trips)
		}
		gotOrg, err := tx.Organizations().Get(o.ID)
		if err != nil {
			return err
		}
		gotDevice, err := tx.Devices().Get(d.IMEI)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(gotOrg, want.org) || !reflect.DeepEqual(gotDevice, want.device) {
			t.Errorf("read along: %+v and %+v; on their own: %+v and %+v", gotOrg, gotDevice, want.org, want.device)
		}
		if _, err := tx.Organizations().Get(o.ID + 100); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("an organization that is not there, read along: %v, want ErrNotFound", err)
		}
		if _, err := tx.Devices().Get("356000000000099"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a device that is not there, read along: %v, want ErrNotFound", err)
		}
		if n := pipeOf(tx).trips - trips; n != 0 {
			t.Errorf("the rows read along took %d round trips more, want 0", n)
		}
		// Read already: nothing goes along with the next statement.
		tx.ReadAlong(store.AlongReads{Organizations: []int64{o.ID}, Devices: []string{d.IMEI}})
		if n := len(pipeOf(tx).along); n != 0 {
			t.Errorf("%d reads along of rows the transaction read, want 0", n)
		}
		return nil
	})

	// In a transaction that writes, a row read along after a queued write
	// of it reads what the write made.
	rollBack := errors.New("rolled back")
	err := e.update(context.Background(), func(tx *tx) error {
		if _, err := tx.Devices().Get(d.IMEI); err != nil {
			return err
		}
		if err := tx.queue(`UPDATE devices SET name = 'Van 7b' WHERE imei = $1`, d.IMEI); err != nil {
			return err
		}
		tx.forget(tableDevices, d.IMEI)
		tx.ReadAlong(store.AlongReads{Devices: []string{d.IMEI}})
		if _, err := tx.Users().Get(u.ID); err != nil {
			return err
		}
		got, err := tx.Devices().Get(d.IMEI)
		if err != nil {
			return err
		}
		if got.Name != "Van 7b" {
			t.Errorf("a device read along after a queued write of its name: %q, want Van 7b", got.Name)
		}
		return rollBack
	})
	if !errors.Is(err, rollBack) {
		t.Fatal(err)
	}
}
