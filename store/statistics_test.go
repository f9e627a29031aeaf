package store_test

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// TestPartnerStatistics seeds two organizations of the partner and one of
// another partner and checks every member against hand-computed values.
// The clock is Wednesday 2026-03-11 10:00 UTC: the current month starts
// 2026-03-01, the current ISO week 2026-03-09.
func TestPartnerStatistics(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t) // org1 "Fleet one" created 2026-03-11
		day := func(m time.Month, d int) time.Time { return time.Date(2026, m, d, 8, 0, 0, 0, time.UTC) }
		var org2, org3 *Organization
		var rival *Partner
		f.clock.Set(day(2, 20))
		f.update(func(tx *Tx) error {
			var err error
			if org2, err = tx.CreateOrganization(f.partner.ID, "Fleet two", nil); err != nil {
				return err
			}
			if rival, err = tx.CreatePartner("Rival"); err != nil {
				return err
			}
			org3, err = tx.CreateOrganization(rival.ID, "Rival fleet", nil)
			return err
		})
		f.clock.Set(time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC))

		type seed struct {
			n         int
			org       *Organization
			partner   int64
			product   string
			status    string
			activated time.Time
			test      string
			adas      bool
		}
		seeds := []seed{
			{1, f.org, f.partner.ID, "AI-12", DeviceActivated, day(3, 9), "passed", true},
			{2, f.org, f.partner.ID, "AI-12", DeviceActivated, day(2, 15), "failed", false},
			{3, org2, f.partner.ID, "AI-14", DevicePendingActivation, time.Time{}, "", false},
			{4, org2, f.partner.ID, "AI-14", DeviceSuspended, day(3, 3), "passed", true},
			{5, org2, f.partner.ID, "", DeviceDeactivated, time.Time{}, "", false},
			{6, org3, rival.ID, "AI-12", DeviceActivated, day(3, 10), "failed", true},
		}
		devs := map[int]*Device{}
		for _, s := range seeds {
			d := &Device{IMEI: fxIMEI(s.n), OrganizationID: s.org.ID, PartnerID: s.partner, ProductType: s.product,
				Status: s.status, ActivatedAt: s.activated}
			f.update(func(tx *Tx) error {
				if err := tx.AddDevice(d); err != nil {
					return err
				}
				_, err := tx.ApplyHealthAlarms(d, DeviceHealth{RecordingTest: s.test, AdasCalibrated: &s.adas})
				return err
			})
			devs[s.n] = d
		}
		f.update(func(tx *Tx) error {
			_, err := tx.SimulateAlarm(devs[1], AlarmSDCardMissing, day(3, 10), "")
			return err
		})

		var got *PartnerStats
		f.view(func(tx *Tx) error {
			var err error
			got, err = tx.PartnerStatistics(f.partner.ID, f.clock.Now(), 1, 1)
			return err
		})
		ago := func(i int) *int { return &i }
		w := func(months bool, i int, start, end time.Time, n int) StatsWindow {
			s := StatsWindow{StartTime: start, EndTime: end, Count: n}
			if months {
				s.MonthsAgo = ago(i)
			} else {
				s.WeeksAgo = ago(i)
			}
			return s
		}
		mar, feb, apr := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
		wk0, wk1, wk2 := time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 16, 0, 0, 0, 0, time.UTC)
		want := &PartnerStats{
			Devices: StatsDevices{Total: 5, Activated: 2, Deactivated: 1, PendingActivation: 1, Suspended: 1},
			Trends: StatsTrends{
				// Activations: device 1 (Mar 9), device 2 (Feb 15), device 4 (Mar 3).
				Activations: StatsTrend{Total: 3,
					PreviousMonths: []StatsWindow{w(true, 0, mar, apr, 2), w(true, 1, feb, mar, 1)},
					PreviousWeeks:  []StatsWindow{w(false, 0, wk0, wk2, 1), w(false, 1, wk1, wk0, 1)}},
				// Organizations: Fleet one (Mar 11), Fleet two (Feb 20).
				Organizations: StatsTrend{Total: 2,
					PreviousMonths: []StatsWindow{w(true, 0, mar, apr, 1), w(true, 1, feb, mar, 1)},
					PreviousWeeks:  []StatsWindow{w(false, 0, wk0, wk2, 1), w(false, 1, wk1, wk0, 0)}},
			},
			DevicesByOrganization:               []StatsOrgCount{{org2.ID, "Fleet two", 3}, {f.org.ID, "Fleet one", 2}},
			RecordingHealthFailedByOrganization: []StatsOrgCount{{f.org.ID, "Fleet one", 1}, {org2.ID, "Fleet two", 0}},
			RecordingHealthSummary:              []StatsRecordingHealth{{"passed", 2}, {"failed", 1}, {"notTested", 2}},
			// Device 2's failed recording test and device 1's simulated SD card alarm.
			AlarmsByOrganization: []StatsOrgCount{{f.org.ID, "Fleet one", 2}, {org2.ID, "Fleet two", 0}},
			AlarmsByType: []StatsAlarmType{{1001, "Recording health test failed", 1}, {1002, "SD card missing", 1},
				{1003, "SD card failing", 0}, {1004, "Camera disconnected", 0}, {1005, "Power disconnected", 0},
				{1006, "Device offline for a long time", 0}},
			AdasCalibrationSummary: []StatsAdas{{"AI-12", 2, 1}, {"AI-14", 2, 1}},
		}
		gj, _ := json.MarshalIndent(got, "", " ")
		wj, _ := json.MarshalIndent(want, "", " ")
		if string(gj) != string(wj) {
			t.Fatalf("statistics\n%s\nwant\n%s", gj, wj)
		}

		f.view(func(tx *Tx) error {
			s, err := tx.PartnerStatistics(f.partner.ID, f.clock.Now(), 0, 3)
			if err != nil || len(s.Trends.Activations.PreviousMonths) != 1 || len(s.Trends.Activations.PreviousWeeks) != 4 {
				t.Errorf("months 0 weeks 3: %+v %v", s.Trends.Activations, err)
			}
			return nil
		})
	})
}
