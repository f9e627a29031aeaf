package postgres

import (
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestDeviceOwnerships logs ownerships of two IMEIs, ends one, records a
// stay from before ownership numbers, and reads each IMEI's log.
func TestDeviceOwnerships(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	d := seedDirectory(t, e)
	a, b := testIMEI(1), testIMEI(2)
	var numbers []int64
	insert := func(imei string) *store.DeviceOwnership {
		o := &store.DeviceOwnership{IMEI: imei, OrganizationID: d.org.ID}
		write(t, e, func(tx *tx) error { return tx.DeviceOwnerships().Insert(o) })
		numbers = append(numbers, o.Ownership)
		return o
	}
	first := insert(a)
	insert(b)
	second := insert(a)
	// The numbers rise across IMEIs, in transactions of their own.
	if !increasing(numbers) || numbers[0] <= 0 {
		t.Fatalf("ownership numbers %v; want positive and increasing", numbers)
	}
	read(t, e, func(tx *tx) error {
		_, err := tx.DeviceOwnerships().Last(testIMEI(3))
		wantErr(t, "the last ownership of an IMEI never owned", err, store.ErrNotFound)
		log, err := tx.DeviceOwnerships().List(testIMEI(3))
		if err != nil || len(log) != 0 {
			t.Errorf("the log of an IMEI never owned: %v, %v; want none", log, err)
		}
		return nil
	})

	// The first stay ended, at a time the log keeps to the millisecond;
	// a device from before ownership numbers is logged under 0.
	ended := testTime.Add(123 * time.Microsecond)
	write(t, e, func(tx *tx) error {
		if err := tx.DeviceOwnerships().Put(&store.DeviceOwnership{IMEI: a, Ownership: first.Ownership,
			OrganizationID: d.org.ID, EndedAt: ended}); err != nil {
			return err
		}
		return tx.DeviceOwnerships().Put(&store.DeviceOwnership{IMEI: a, Ownership: 0, OrganizationID: d.org.ID,
			EndedAt: testTime.Add(-time.Hour)})
	})
	read(t, e, func(tx *tx) error {
		log, err := tx.DeviceOwnerships().List(a)
		if err != nil {
			return err
		}
		wantEqual(t, "the log of "+a, log, []store.DeviceOwnership{
			{IMEI: a, Ownership: 0, OrganizationID: d.org.ID, EndedAt: testTime.Add(-time.Hour).Truncate(time.Millisecond)},
			{IMEI: a, Ownership: first.Ownership, OrganizationID: d.org.ID, EndedAt: ended.Truncate(time.Millisecond)},
			{IMEI: a, Ownership: second.Ownership, OrganizationID: d.org.ID},
		})
		last, err := tx.DeviceOwnerships().Last(a)
		if err != nil {
			return err
		}
		wantEqual(t, "the last ownership of "+a, last, second)
		last, err = tx.DeviceOwnerships().Last(b)
		if err != nil {
			return err
		}
		wantEqual(t, "the last ownership of "+b, last, &store.DeviceOwnership{IMEI: b, Ownership: numbers[1],
			OrganizationID: d.org.ID})
		return nil
	})

	// Put replaces what was logged for an IMEI and number.
	other := &store.Organization{Name: "Other", PartnerID: d.p.ID, PartnerIDs: []int64{d.p.ID}, CreatedAt: testTime}
	write(t, e, func(tx *tx) error {
		if err := tx.Organizations().Insert(other); err != nil {
			return err
		}
		return tx.DeviceOwnerships().Put(&store.DeviceOwnership{IMEI: a, Ownership: second.Ownership,
			OrganizationID: other.ID, EndedAt: testTime})
	})
	read(t, e, func(tx *tx) error {
		last, err := tx.DeviceOwnerships().Last(a)
		if err != nil {
			return err
		}
		wantEqual(t, "the replaced ownership", last, &store.DeviceOwnership{IMEI: a, Ownership: second.Ownership,
			OrganizationID: other.ID, EndedAt: testTime.Truncate(time.Millisecond)})
		return nil
	})
	// After those Puts, a new number is still greater than every one given
	// before.
	if next := insert(b); next.Ownership <= second.Ownership {
		t.Errorf("ownership %d after %d; want greater", next.Ownership, second.Ownership)
	}
}
