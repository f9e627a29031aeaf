package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// alarmListFixture holds five alarms of two organizations of two partners:
//
//	id device            org / partner            definition (severity)       createdAt
//	1  "Zulu truck" (1)  Fleet one / Partner      recording failed (60)       t0+2h
//	2  "alpha van"  (2)  Bravo fleet / Zed        device offline (30)         t0
//	3  "Zulu truck" (1)  Fleet one / Partner      camera disconnected (40)    t0+1h+0.5ms, closed
//	4  "alpha van"  (2)  Bravo fleet / Zed        power disconnected (40)     t0+1h
//	5  removed      (3)  Fleet one / Partner      SD card failing (50)        t0+3h
type alarmListFixture struct {
	*fleetFixture
	t0    time.Time
	bravo *Organization
	zed   *Partner
}

func newAlarmListFixture(t *testing.T) *alarmListFixture {
	f := &alarmListFixture{fleetFixture: newFleetFixture(t), t0: time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)}
	f.update(func(tx *Tx) error {
		var err error
		if f.zed, err = tx.CreatePartner("Zed partner"); err != nil {
			return err
		}
		f.bravo, err = tx.CreateOrganization(f.zed.ID, "Bravo fleet", []byte("salt"))
		return err
	})
	zulu := &Device{IMEI: fxIMEI(1), Name: "Zulu truck", OrganizationID: f.org.ID, PartnerID: f.partner.ID}
	alpha := &Device{IMEI: fxIMEI(2), Name: "alpha van", OrganizationID: f.bravo.ID, PartnerID: f.zed.ID}
	gone := &Device{IMEI: fxIMEI(3), Name: "Bus", OrganizationID: f.org.ID, PartnerID: f.partner.ID}
	f.update(func(tx *Tx) error {
		for _, d := range []*Device{zulu, alpha, gone} {
			if err := tx.AddDevice(d); err != nil {
				return err
			}
		}
		for _, a := range []struct {
			dev *Device
			def int64
			at  time.Duration
		}{
			{zulu, AlarmRecordingFailed, 2 * time.Hour},
			{alpha, AlarmDeviceOffline, 0},
			{zulu, AlarmCameraDisconnected, time.Hour + 500*time.Microsecond},
			{alpha, AlarmPowerDisconnected, time.Hour},
			{gone, AlarmSDCardFailing, 3 * time.Hour},
		} {
			if _, err := tx.SimulateAlarm(a.dev, a.def, f.t0.Add(a.at), ""); err != nil {
				return err
			}
		}
		if _, err := tx.ActOnAlarm(3, AlarmActionClose); err != nil {
			return err
		}
		return tx.RemoveDevice(gone.IMEI)
	})
	return f
}

func alarmIDs(as []Alarm) []int64 {
	ids := []int64{}
	for _, a := range as {
		ids = append(ids, a.ID)
	}
	return ids
}

func TestAlarmsList(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newAlarmListFixture(t)
		tests := []struct {
			name      string
			filter    AlarmFilter
			sort      Sort
			page      Page
			wantIDs   []int64
			wantTotal int
		}{
			{"everything in id order", AlarmFilter{}, Sort{}, Page{}, []int64{1, 2, 3, 4, 5}, 5},
			{"id order descending", AlarmFilter{}, Sort{Desc: true}, Page{}, []int64{5, 4, 3, 2, 1}, 5},
			{"createdAt ties to the millisecond fall in id order", AlarmFilter{}, Sort{Key: AlarmByCreatedAt}, Page{}, []int64{2, 3, 4, 1, 5}, 5},
			{"createdAt descending reverses the ties too", AlarmFilter{}, Sort{Key: AlarmByCreatedAt, Desc: true}, Page{}, []int64{5, 1, 4, 3, 2}, 5},
			{"device name, a removed device's empty name first", AlarmFilter{}, Sort{Key: AlarmByDeviceName}, Page{}, []int64{5, 1, 3, 2, 4}, 5},
			{"device name descending", AlarmFilter{}, Sort{Key: AlarmByDeviceName, Desc: true}, Page{}, []int64{4, 2, 3, 1, 5}, 5},
			{"imei", AlarmFilter{}, Sort{Key: AlarmByIMEI}, Page{}, []int64{1, 3, 2, 4, 5}, 5},
			{"organization name", AlarmFilter{}, Sort{Key: AlarmByOrganizationName}, Page{}, []int64{2, 4, 1, 3, 5}, 5},
			{"organization name descending", AlarmFilter{}, Sort{Key: AlarmByOrganizationName, Desc: true}, Page{}, []int64{5, 3, 1, 4, 2}, 5},
			{"partner name", AlarmFilter{}, Sort{Key: AlarmByPartnerName}, Page{}, []int64{1, 3, 5, 2, 4}, 5},
			{"severity", AlarmFilter{}, Sort{Key: AlarmBySeverity}, Page{}, []int64{2, 3, 4, 5, 1}, 5},
			{"severity descending", AlarmFilter{}, Sort{Key: AlarmBySeverity, Desc: true}, Page{}, []int64{1, 5, 4, 3, 2}, 5},
			{"definition name", AlarmFilter{}, Sort{Key: AlarmByDefinitionName}, Page{}, []int64{3, 2, 4, 1, 5}, 5},
			{"device name contains, ignoring case", AlarmFilter{DeviceName: "ALPHA"}, Sort{}, Page{}, []int64{2, 4}, 2},
			{"a removed device matches no name", AlarmFilter{DeviceName: "bus"}, Sort{}, Page{}, []int64{}, 0},
			{"organizations", AlarmFilter{OrganizationIDs: map[int64]bool{f.org.ID: true}}, Sort{}, Page{}, []int64{1, 3, 5}, 3},
			{"partner", AlarmFilter{PartnerID: f.zed.ID}, Sort{}, Page{}, []int64{2, 4}, 2},
			{"imei filter", AlarmFilter{IMEI: fxIMEI(1)}, Sort{}, Page{}, []int64{1, 3}, 2},
			{"definition id", AlarmFilter{DefinitionID: AlarmDeviceOffline}, Sort{}, Page{}, []int64{2}, 1},
			{"definition name contains", AlarmFilter{DefinitionName: "DISCONNECTED"}, Sort{}, Page{}, []int64{3, 4}, 2},
			{"severity filter", AlarmFilter{Severity: 40}, Sort{}, Page{}, []int64{3, 4}, 2},
			{"closed", AlarmFilter{Open: boolp(false)}, Sort{}, Page{}, []int64{3}, 1},
			{"unread", AlarmFilter{Read: boolp(false)}, Sort{}, Page{}, []int64{1, 2, 3, 4, 5}, 5},
			{"created from start to end inclusive", AlarmFilter{Start: f.t0.Add(time.Hour), End: f.t0.Add(2 * time.Hour)}, Sort{}, Page{}, []int64{1, 3, 4}, 3},
			{"after id", AlarmFilter{AfterID: 3}, Sort{}, Page{}, []int64{4, 5}, 2},
			{"a page of the sorted list", AlarmFilter{}, Sort{Key: AlarmByCreatedAt, Desc: true}, Page{Limit: 2, Offset: 1}, []int64{1, 4}, 5},
			{"a page past the end", AlarmFilter{}, Sort{Key: AlarmByCreatedAt}, Page{Limit: 2, Offset: 5}, []int64{}, 5},
			{"the total counts the filtered list", AlarmFilter{DeviceName: "truck"}, Sort{Key: AlarmBySeverity}, Page{Limit: 1}, []int64{3}, 2},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				f.view(func(tx *Tx) error {
					got, total, err := tx.Alarms(tc.filter, tc.sort, tc.page)
					if err != nil {
						return err
					}
					if ids := alarmIDs(got); !slices.Equal(ids, tc.wantIDs) || total != tc.wantTotal {
						t.Errorf("got %v of %d, want %v of %d", ids, total, tc.wantIDs, tc.wantTotal)
					}
					return nil
				})
			})
		}
		t.Run("an unknown sort key is refused", func(t *testing.T) {
			err := f.db.View(t.Context(), func(tx *Tx) error {
				_, _, err := tx.Alarms(AlarmFilter{}, Sort{Key: "name"}, Page{})
				return err
			})
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
		})
	})
}
