package postgres

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// testIMEI is the IMEI of test device n.
func testIMEI(n int) string { return fmt.Sprintf("35%013d", n) }

// TestDevices stores a device with every field set, refuses its IMEI a
// second time in a transaction that goes on, replaces it in its
// organization and deletes it.
func TestDevices(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	d := seedDirectory(t, e)
	dev := &store.Device{IMEI: testIMEI(1), Name: "Truck 1", OrganizationID: d.org.ID, PartnerID: d.q.ID,
		GroupID: d.group.ID, Status: store.DeviceActivated, ProductType: "dc500", DataProfileID: 3,
		CreatedAt: testTime, ActivatedAt: testTime.Add(time.Hour), Ownership: 7, PreviousOwnerUntil: testTime.Add(-time.Hour)}
	bare := &store.Device{IMEI: testIMEI(2), OrganizationID: d.org.ID, PartnerID: d.p.ID,
		Status: store.DevicePendingActivation, CreatedAt: testTime}
	write(t, e, func(tx *tx) error {
		for _, dev := range []*store.Device{dev, bare} {
			if err := tx.Devices().Insert(dev); err != nil {
				return err
			}
		}
		again := *bare
		again.Name = "again"
		wantErr(t, "a second device with one IMEI", tx.Devices().Insert(&again), store.ErrConflict)
		// The transaction goes on after the refusal.
		return tx.Devices().Insert(&store.Device{IMEI: testIMEI(3), OrganizationID: d.org.ID, PartnerID: d.p.ID,
			Status: store.DeviceSuspended, CreatedAt: testTime})
	})
	get := func(imei string) (got *store.Device, err error) {
		read(t, e, func(tx *tx) error {
			got, err = tx.Devices().Get(imei)
			return nil
		})
		return got, err
	}
	for _, want := range []*store.Device{dev, bare} {
		got, err := get(want.IMEI)
		if err != nil {
			t.Fatal(err)
		}
		wantEqual(t, "device", got, want)
	}
	_, err := get(testIMEI(4))
	wantErr(t, "an unknown device", err, store.ErrNotFound)

	changed := *dev
	changed.Name, changed.GroupID, changed.Status, changed.ActivatedAt = "Renamed", 0, store.DeviceDeactivated, testTime
	changed.PartnerID = d.p.ID
	write(t, e, func(tx *tx) error {
		if err := tx.Devices().Put(&changed); err != nil {
			return err
		}
		wantErr(t, "Put of an unknown device", tx.Devices().Put(&store.Device{IMEI: testIMEI(4),
			OrganizationID: d.org.ID, PartnerID: d.p.ID, Status: store.DeviceActivated}), store.ErrNotFound)
		return nil
	})
	got, err := get(dev.IMEI)
	if err != nil {
		t.Fatal(err)
	}
	wantEqual(t, "the device put", got, &changed)

	write(t, e, func(tx *tx) error {
		if err := tx.Devices().Delete(dev.IMEI); err != nil {
			return err
		}
		wantErr(t, "Delete of a deleted device", tx.Devices().Delete(dev.IMEI), store.ErrNotFound)
		return nil
	})
	_, err = get(dev.IMEI)
	wantErr(t, "a deleted device", err, store.ErrNotFound)
}

// TestDeviceStamp reads the stamp of a device as it is written, deleted
// and added again: it changes with every write and with nothing else, and
// no two versions of the row share one.
func TestDeviceStamp(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	d := seedDirectory(t, e)
	dev := &store.Device{IMEI: testIMEI(1), Name: "Truck", OrganizationID: d.org.ID, PartnerID: d.p.ID,
		Status: store.DeviceActivated, CreatedAt: testTime}
	stamp := func() (s uint64, err error) {
		read(t, e, func(tx *tx) error {
			s, err = tx.Devices().Stamp(dev.IMEI)
			return nil
		})
		return s, err
	}
	_, err := stamp()
	wantErr(t, "the stamp of an unknown device", err, store.ErrNotFound)
	seen := map[uint64]string{}
	see := func(what string) {
		t.Helper()
		s, err := stamp()
		if err != nil {
			t.Fatal(err)
		}
		if s == 0 {
			t.Fatalf("the stamp %s is 0, which says none was read", what)
		}
		if again, _ := stamp(); again != s {
			t.Fatalf("the stamp %s went from %d to %d without a write", what, s, again)
		}
		if before, ok := seen[s]; ok {
			t.Fatalf("the stamp %s is %d, as it was %s", what, s, before)
		}
		seen[s] = what
	}
	write(t, e, func(tx *tx) error { return tx.Devices().Insert(dev) })
	see("after the insert")
	write(t, e, func(tx *tx) error { dev.Name = "Renamed"; return tx.Devices().Put(dev) })
	see("after a put")
	write(t, e, func(tx *tx) error { return tx.Devices().Put(dev) })
	see("after a put of the same record")
	// Another device's write leaves it be.
	write(t, e, func(tx *tx) error {
		other := *dev
		other.IMEI = testIMEI(2)
		return tx.Devices().Insert(&other)
	})
	if s, err := stamp(); err != nil || seen[s] != "after a put of the same record" {
		t.Fatalf("another device's insert changed the stamp to %d, %v", s, err)
	}
	write(t, e, func(tx *tx) error {
		if err := tx.Devices().Delete(dev.IMEI); err != nil {
			return err
		}
		return tx.Devices().Insert(dev)
	})
	see("after a removal and a new add")
}

// TestDevicesList lists devices of two organizations as DeviceFilter.Match
// selects them, in IMEI order.
func TestDevicesList(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	d := seedDirectory(t, e)
	other := &store.Organization{Name: "Other", PartnerID: d.q.ID, PartnerIDs: []int64{d.q.ID}, CreatedAt: testTime}
	write(t, e, func(tx *tx) error {
		if err := tx.Organizations().Insert(other); err != nil {
			return err
		}
		for _, dev := range []*store.Device{
			// Inserted out of IMEI order.
			{IMEI: testIMEI(5), Name: "ÄRGER Van", OrganizationID: d.org.ID, PartnerID: d.p.ID, GroupID: d.group.ID},
			{IMEI: testIMEI(1), Name: "Truck 1", OrganizationID: d.org.ID, PartnerID: d.p.ID, GroupID: d.group.ID},
			{IMEI: testIMEI(3), Name: "truck 3 (50%_off)", OrganizationID: d.org.ID, PartnerID: d.q.ID},
			{IMEI: testIMEI(2), Name: "Van 2", OrganizationID: other.ID, PartnerID: d.q.ID},
			{IMEI: testIMEI(4), Name: "", OrganizationID: d.org.ID, PartnerID: d.q.ID},
		} {
			dev.Status, dev.CreatedAt = store.DeviceActivated, testTime
			if err := tx.Devices().Insert(dev); err != nil {
				return err
			}
		}
		return nil
	})
	imeis := func(ns ...int) []string {
		var out []string
		for _, n := range ns {
			out = append(out, testIMEI(n))
		}
		return out
	}
	org := d.org.ID
	tests := []struct {
		name      string
		filter    store.DeviceFilter
		page      store.Page
		want      []string
		wantTotal int
	}{
		{"every device in IMEI order", store.DeviceFilter{}, store.Page{}, imeis(1, 2, 3, 4, 5), 5},
		{"an organization's", store.DeviceFilter{OrganizationID: org}, store.Page{}, imeis(1, 3, 4, 5), 4},
		{"a partner's in every organization", store.DeviceFilter{PartnerID: d.q.ID}, store.Page{}, imeis(2, 3, 4), 3},
		{"a partner's in one organization", store.DeviceFilter{OrganizationID: org, PartnerID: d.q.ID}, store.Page{}, imeis(3, 4), 2},
		{"a group's", store.DeviceFilter{OrganizationID: org, GroupID: d.group.ID}, store.Page{}, imeis(1, 5), 2},
		{"one IMEI", store.DeviceFilter{OrganizationID: org, IMEI: testIMEI(3)}, store.Page{}, imeis(3), 1},
		{"one IMEI of another organization", store.DeviceFilter{OrganizationID: org, IMEI: testIMEI(2)}, store.Page{}, nil, 0},
		{"a name in any case", store.DeviceFilter{Name: "TRUCK"}, store.Page{}, imeis(1, 3), 2},
		{"a name beyond ASCII in any case", store.DeviceFilter{Name: "ärger"}, store.Page{}, imeis(5), 1},
		{"a name with LIKE's wildcards, literally", store.DeviceFilter{Name: "50%_"}, store.Page{}, imeis(3), 1},
		{"a wildcard alone, only where a name holds it", store.DeviceFilter{Name: "%"}, store.Page{}, imeis(3), 1},
		{"no name matches", store.DeviceFilter{Name: "bus"}, store.Page{}, nil, 0},
		{"a set of IMEIs", store.DeviceFilter{IMEIs: map[string]bool{testIMEI(4): true, testIMEI(2): true, testIMEI(1): false}}, store.Page{}, imeis(2, 4), 2},
		{"an empty set of IMEIs", store.DeviceFilter{IMEIs: map[string]bool{}}, store.Page{}, nil, 0},
		{"every field", store.DeviceFilter{OrganizationID: org, PartnerID: d.p.ID, GroupID: d.group.ID, IMEI: testIMEI(5),
			Name: "van", IMEIs: map[string]bool{testIMEI(5): true}}, store.Page{}, imeis(5), 1},
		{"a page", store.DeviceFilter{}, store.Page{Limit: 2, Offset: 2}, imeis(3, 4), 5},
		{"a page of a filtered list", store.DeviceFilter{OrganizationID: org}, store.Page{Limit: 2, Offset: 3}, imeis(5), 4},
		{"a page past the end", store.DeviceFilter{OrganizationID: org}, store.Page{Limit: 2, Offset: 9}, nil, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read(t, e, func(tx *tx) error {
				got, total, err := tx.Devices().List(tc.filter, tc.page)
				if err != nil {
					return err
				}
				var gotIMEIs []string
				for _, dev := range got {
					gotIMEIs = append(gotIMEIs, dev.IMEI)
					if !tc.filter.Match(&dev) {
						t.Errorf("device %s does not match the filter", dev.IMEI)
					}
				}
				if !slices.Equal(gotIMEIs, tc.want) || total != tc.wantTotal {
					t.Errorf("got %v of %d, want %v of %d", gotIMEIs, total, tc.want, tc.wantTotal)
				}
				return nil
			})
		})
	}
	read(t, e, func(tx *tx) error {
		for org, want := range map[int64][]string{d.org.ID: imeis(1, 3, 4, 5), other.ID: imeis(2), other.ID + 1: nil} {
			got, err := tx.Devices().OrganizationIMEIs(org)
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				t.Errorf("OrganizationIMEIs(%d) = %v; want %v", org, got, want)
			}
		}
		return nil
	})
}

// TestDeviceGroupOfItsOrganization: the schema keeps a device out of
// another organization's group, as the store's rules do.
func TestDeviceGroupOfItsOrganization(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	d := seedDirectory(t, e)
	var other *store.Organization
	write(t, e, func(tx *tx) error {
		other = &store.Organization{Name: "Other", PartnerID: d.p.ID, PartnerIDs: []int64{d.p.ID}, CreatedAt: testTime}
		return tx.Organizations().Insert(other)
	})
	err := e.update(t.Context(), func(tx *tx) error {
		return tx.Devices().Insert(&store.Device{IMEI: testIMEI(1), OrganizationID: other.ID, PartnerID: d.p.ID,
			GroupID: d.group.ID, Status: store.DeviceActivated, CreatedAt: testTime})
	})
	if err == nil {
		t.Fatal("a device went into a group of another organization")
	}
}
