package bolt_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/fleetcam/fleetcam/store"
)

// The keys of the drivers' buckets as the file has them: ids and times as 8
// bytes big-endian (be8), strings followed by a 0 byte where more follows.
func driverOrgKey(org int64, s string) []byte { return append(append(be8(org), 0), s...) }

func driverSeriesKey(imei string, at time.Time, more ...[]byte) []byte {
	k := append(append([]byte(imei), 0), be8(at.UnixMilli())...)
	for _, m := range more {
		k = append(k, m...)
	}
	return k
}

// TestDriverRecordsOfAnEarlierFile reads drivers, an assignment, a session
// and wrong PINs written as the file has always kept them.
func TestDriverRecordsOfAnEarlierFile(t *testing.T) {
	f := newDeviceFixture(t)
	org, imei := f.org.ID, f.dev.IMEI
	start := f.clock.Now().Add(time.Hour)
	at := func(d time.Duration) string { return start.Add(d).Format(time.RFC3339Nano) }
	put := func(b *bbolt.Bucket, k []byte, v string) {
		if err := b.Put(k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	err := f.bolt.Update(func(btx *bbolt.Tx) error {
		drivers := btx.Bucket([]byte("drivers"))
		put(drivers, be8(7), fmt.Sprintf(`{"id":7,"organizationId":%d,"driverThirdPartyId":"tp7","firstName":"Ann",`+
			`"driverCode":"12345","qrPayload":"FCDRV1-SEVEN","isActive":true,"createdAt":%q,"updatedAt":%q}`, org, at(0), at(0)))
		if err := drivers.SetSequence(7); err != nil {
			return err
		}
		put(btx.Bucket([]byte("driver_codes")), driverOrgKey(org, "12345"), string(be8(7)))
		put(btx.Bucket([]byte("driver_third_party")), driverOrgKey(org, "tp7"), string(be8(7)))
		put(btx.Bucket([]byte("driver_qr")), []byte("FCDRV1-SEVEN"), string(be8(7)))

		ak := driverSeriesKey(imei, start, be8(3))
		assignments := btx.Bucket([]byte("driver_assignments"))
		put(assignments, ak, fmt.Sprintf(`{"id":3,"organizationId":%d,"driverId":7,"imei":%q,"startTime":%q,"createdAt":%q,"ownership":%d}`,
			org, imei, at(0), at(0), f.dev.Ownership))
		if err := assignments.SetSequence(3); err != nil {
			return err
		}
		put(btx.Bucket([]byte("driver_assign_by_id")), be8(3), string(ak))

		sk := driverSeriesKey(imei, start.Add(time.Minute))
		put(btx.Bucket([]byte("driver_sessions")), sk, fmt.Sprintf(`{"imei":%q,"organizationId":%d,"driverId":7,"start":%q,"method":"pin","eventId":"e1","ownership":%d}`,
			imei, org, at(time.Minute), f.dev.Ownership))
		put(btx.Bucket([]byte("driver_current")), []byte(imei), string(sk))
		put(btx.Bucket([]byte("driver_pin_failures")), []byte(imei), fmt.Sprintf(`[%q,%q]`, at(2*time.Minute), at(3*time.Minute)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	f.view(func(tx *store.Tx) error {
		for name, lookup := range map[string]func() (*store.Driver, error){
			"by code":           func() (*store.Driver, error) { return tx.DriverByCode(org, "12345") },
			"by third-party id": func() (*store.Driver, error) { return tx.DriverByThirdPartyID(org, "tp7") },
			"by QR payload":     func() (*store.Driver, error) { return tx.DriverByQR("FCDRV1-SEVEN") },
		} {
			if d, err := lookup(); err != nil || d.ID != 7 || d.FirstName != "Ann" || !d.IsActive {
				t.Errorf("driver %s: %+v %v, want driver 7", name, d, err)
			}
		}
		if as, err := tx.DeviceAssignments(imei); err != nil || len(as) != 1 || as[0].ID != 3 || as[0].DriverID != 7 || !as[0].Start.Equal(start) {
			t.Errorf("assignments %+v %v, want assignment 3 of driver 7", as, err)
		}
		if s, err := tx.CheckedInDriver(imei); err != nil || s == nil || s.DriverID != 7 || s.EventID != "e1" {
			t.Errorf("checked in %+v %v, want driver 7's session", s, err)
		}
		if m, err := tx.CheckedInDrivers(); err != nil || len(m) != 1 || m[7] != imei {
			t.Errorf("checked-in drivers %v %v, want driver 7 at %s", m, err, imei)
		}
		if d, err := tx.CurrentDriver(f.dev, start.Add(90*time.Second)); err != nil || d == nil || d.ID != 7 {
			t.Errorf("current driver %+v %v, want driver 7", d, err)
		}
		return nil
	})

	// The two wrong PINs on file and a third make a wrongPinCode event.
	f.update(func(tx *store.Tx) error {
		ts, err := tx.ApplyDriverEvent(f.dev, store.EventInput{DeviceEventID: "e2", Type: "driverCheckIn",
			Time: start.Add(4 * time.Minute), PinCode: "99999"})
		if err != nil {
			return err
		}
		if len(ts) != 1 || ts[0].Type != "wrongPinCode" {
			t.Errorf("third wrong PIN: %+v, want one wrongPinCode", ts)
		}
		return nil
	})

	// New records take the next ids of the buckets' sequences.
	f.update(func(tx *store.Tx) error {
		d := &store.Driver{OrganizationID: org, ThirdPartyID: "tp8"}
		if err := tx.CreateDriver(d); err != nil {
			return err
		}
		if d.ID != 8 {
			t.Errorf("new driver id %d, want 8", d.ID)
		}
		return nil
	})
}

// TestDriverRecordsWhereTheFileKeepsThem writes drivers, assignments and
// sessions through the store and finds them under the keys the file has
// always had, and their indexes gone with them.
func TestDriverRecordsWhereTheFileKeepsThem(t *testing.T) {
	f := newDeviceFixture(t)
	org, imei := f.org.ID, f.dev.IMEI
	d := &store.Driver{OrganizationID: org, ThirdPartyID: "tp1", Code: "11111"}
	f.update(func(tx *store.Tx) error { return tx.CreateDriver(d) })
	start := f.clock.Now()
	f.update(func(tx *store.Tx) error {
		return tx.AssignDriver(&store.DriverAssignment{OrganizationID: org, DriverID: d.ID, IMEI: imei})
	})
	f.clock.Advance(time.Minute)
	f.update(func(tx *store.Tx) error {
		_, err := tx.ApplyDriverEvent(f.dev, store.EventInput{DeviceEventID: "e1", Type: "driverCheckIn", Time: f.clock.Now(), PinCode: "11111"})
		return err
	})
	checkIn := f.clock.Now()
	f.update(func(tx *store.Tx) error {
		_, err := tx.ApplyDriverEvent(f.dev, store.EventInput{DeviceEventID: "e2", Type: "driverCheckIn", Time: f.clock.Now(), PinCode: "22222"})
		return err
	})

	type entry struct {
		bucket string
		key    []byte
		want   func(v []byte) bool // nil: absent
	}
	is := func(want []byte) func([]byte) bool { return func(v []byte) bool { return bytes.Equal(v, want) } }
	has := func(sub string) func([]byte) bool {
		return func(v []byte) bool { return bytes.Contains(v, []byte(sub)) }
	}
	ak := driverSeriesKey(imei, start, be8(1))
	sk := driverSeriesKey(imei, checkIn)
	check := func(stage string, entries []entry) {
		t.Helper()
		err := f.bolt.View(func(btx *bbolt.Tx) error {
			for _, e := range entries {
				v := btx.Bucket([]byte(e.bucket)).Get(e.key)
				switch {
				case e.want == nil && v != nil:
					t.Errorf("%s: %s %q is %q, want none", stage, e.bucket, e.key, v)
				case e.want != nil && (v == nil || !e.want(v)):
					t.Errorf("%s: %s %q is %q", stage, e.bucket, e.key, v)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check("created", []entry{
		{"drivers", be8(d.ID), has(`"driverCode":"11111"`)},
		{"driver_codes", driverOrgKey(org, "11111"), is(be8(d.ID))},
		{"driver_third_party", driverOrgKey(org, "tp1"), is(be8(d.ID))},
		{"driver_qr", []byte(d.QRPayload), is(be8(d.ID))},
		{"driver_assignments", ak, has(fmt.Sprintf(`"driverId":%d`, d.ID))},
		{"driver_assign_by_id", be8(1), is(ak)},
		{"driver_sessions", sk, has(`"eventId":"e1"`)},
		{"driver_current", []byte(imei), is(sk)},
		{"driver_pin_failures", []byte(imei), has(checkIn.Format(time.RFC3339))},
	})

	code := "33333"
	f.clock.Advance(time.Minute)
	f.update(func(tx *store.Tx) error {
		if _, err := tx.UpdateDriver(d.ID, store.DriverPatch{Code: &code}); err != nil {
			return err
		}
		if _, err := tx.CheckOutDriver(imei); err != nil {
			return err
		}
		return tx.UnassignDriver(org, d.ID, imei)
	})
	check("changed", []entry{
		{"driver_codes", driverOrgKey(org, "11111"), nil},
		{"driver_codes", driverOrgKey(org, "33333"), is(be8(d.ID))},
		{"driver_assignments", ak, has(`"endTime"`)},
		{"driver_assign_by_id", be8(1), is(ak)},
		{"driver_sessions", sk, has(`"endedBy":"api"`)},
		{"driver_current", []byte(imei), nil},
	})

	inactive := false
	f.update(func(tx *store.Tx) error {
		if _, err := tx.UpdateDriver(d.ID, store.DriverPatch{IsActive: &inactive}); err != nil {
			return err
		}
		return tx.DeleteDriver(d.ID)
	})
	check("deleted", []entry{
		{"drivers", be8(d.ID), nil},
		{"driver_codes", driverOrgKey(org, "33333"), nil},
		{"driver_third_party", driverOrgKey(org, "tp1"), nil},
		{"driver_qr", []byte(d.QRPayload), nil},
		{"driver_assignments", ak, nil},
		{"driver_assign_by_id", be8(1), nil},
		{"driver_sessions", sk, has(`"endedBy":"api"`)},
	})
}
