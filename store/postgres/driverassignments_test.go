package postgres

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

func assignmentIDs(as []store.DriverAssignment) []int64 {
	ids := []int64{}
	for _, a := range as {
		ids = append(ids, a.ID)
	}
	return ids
}

// TestDriverAssignmentsByDeviceAndDriver inserts, reads, moves and deletes
// assignments, in the orders DriverAssignmentSet promises.
func TestDriverAssignmentsByDeviceAndDriver(t *testing.T) {
	t.Parallel()
	s := seedDrivers(t)
	t0 := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	d1, d2 := driver(s.org1, 1, "Ann", "", "", true, t0), driver(s.org1, 2, "Bob", "", "", true, t0)
	s.update(t, func(t *tx) error {
		if err := t.Drivers().Insert(d1); err != nil {
			return err
		}
		return t.Drivers().Insert(d2)
	})
	as := []*store.DriverAssignment{
		{OrganizationID: s.org1, DriverID: d1.ID, IMEI: sessionIMEI2, Start: t0.Add(2 * time.Hour), End: t0.Add(3 * time.Hour), CreatedAt: t0, Ownership: 1},
		{OrganizationID: s.org1, DriverID: d1.ID, IMEI: sessionIMEI1, Start: t0.Add(5 * time.Hour), CreatedAt: t0, Ownership: 1},
		{OrganizationID: s.org1, DriverID: d2.ID, IMEI: sessionIMEI2, Start: t0, End: t0.Add(time.Hour), CreatedAt: t0},
		{OrganizationID: s.org1, DriverID: d1.ID, IMEI: sessionIMEI2, Start: t0.Add(2 * time.Hour), CreatedAt: t0.Add(time.Minute)},
	}
	s.update(t, func(t *tx) error {
		for _, a := range as {
			if err := t.DriverAssignments().Insert(a); err != nil {
				return err
			}
		}
		return nil
	})
	for i := 1; i < len(as); i++ {
		if as[i].ID <= as[i-1].ID {
			t.Fatalf("assignment ids %d then %d; want increasing ids", as[i-1].ID, as[i].ID)
		}
	}
	s.view(t, func(tx *tx) error {
		got, err := tx.DriverAssignments().ByDevice(sessionIMEI2)
		if want := []int64{as[2].ID, as[0].ID, as[3].ID}; err != nil || !slices.Equal(assignmentIDs(got), want) {
			t.Errorf("ByDevice = %v, %v; want %v (by start, then id)", assignmentIDs(got), err, want)
		}
		if err == nil && (!got[1].End.Equal(as[0].End) || !got[1].Start.Equal(as[0].Start) || got[1].Ownership != 1 || !got[2].End.IsZero()) {
			t.Errorf("ByDevice read %+v and %+v; want %+v and no end", got[1], got[2], *as[0])
		}
		got, err = tx.DriverAssignments().ByDriver(d1.ID)
		if want := []int64{as[1].ID, as[0].ID, as[3].ID}; err != nil || !slices.Equal(assignmentIDs(got), want) {
			t.Errorf("ByDriver = %v, %v; want %v (by device, start, then id)", assignmentIDs(got), err, want)
		}
		if got, err := tx.DriverAssignments().ByDevice("357660100000033"); err != nil || len(got) != 0 {
			t.Errorf("ByDevice of a device without assignments = %v, %v", got, err)
		}
		return nil
	})

	// An update may move an assignment to another device and start.
	moved := *as[0]
	moved.IMEI, moved.Start, moved.End = sessionIMEI1, t0, t0.Add(30*time.Minute)
	s.update(t, func(t *tx) error { return t.DriverAssignments().Update(&moved) })
	s.view(t, func(tx *tx) error {
		got, err := tx.DriverAssignments().ByDevice(sessionIMEI1)
		if want := []int64{moved.ID, as[1].ID}; err != nil || !slices.Equal(assignmentIDs(got), want) || !got[0].End.Equal(moved.End) {
			t.Errorf("ByDevice after moving = %+v, %v; want %v", got, err, want)
		}
		return nil
	})
	for name, fn := range map[string]func(t *tx) error{
		"Update": func(t *tx) error {
			a := moved
			a.ID += 100
			return t.DriverAssignments().Update(&a)
		},
		"Delete": func(t *tx) error { return t.DriverAssignments().Delete(moved.ID + 100) },
	} {
		if err := s.e.update(context.Background(), fn); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of no assignment: %v; want ErrNotFound", name, err)
		}
	}

	// A driver goes with its assignments, in one transaction, and not without.
	err := s.e.update(context.Background(), func(t *tx) error { return t.Drivers().Delete(d2.ID) })
	if err == nil {
		t.Error("a driver with an assignment was deleted alone")
	}
	s.update(t, func(t *tx) error {
		if err := t.Drivers().Delete(d2.ID); err != nil {
			return err
		}
		return t.DriverAssignments().Delete(as[2].ID)
	})
	s.view(t, func(tx *tx) error {
		if got, err := tx.DriverAssignments().ByDriver(d2.ID); err != nil || len(got) != 0 {
			t.Errorf("ByDriver of a deleted driver = %v, %v; want none", got, err)
		}
		if got, err := tx.DriverAssignments().ByDevice(sessionIMEI2); err != nil || !slices.Equal(assignmentIDs(got), []int64{as[3].ID}) {
			t.Errorf("ByDevice after Delete = %v, %v; want %d", assignmentIDs(got), err, as[3].ID)
		}
		return nil
	})
}
