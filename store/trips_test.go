package store_test

import (
	"math"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func TestHaversine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                   string
		lat1, lon1, lat2, lon2 float64
		want                   float64
	}{
		{"same point", 52.5, 13.4, 52.5, 13.4, 0},
		{"one degree of latitude", 0, 0, 1, 0, 111195.08},
		{"Berlin to Paris", 52.5200, 13.4050, 48.8566, 2.3522, 877464},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Haversine(tt.lat1, tt.lon1, tt.lat2, tt.lon2); math.Abs(got-tt.want) > tt.want*0.001+0.01 {
				t.Fatalf("%f m, want %f", got, tt.want)
			}
		})
	}
}

func TestTrips(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		dev := f.addDevice(1, f.org, f.partner.ID)
		other := f.addDevice(2, f.org, f.partner.ID)
		a := f.addDriver(f.org, "a")
		b := f.addDriver(f.org, "b")
		t0 := f.clock.Now()
		ms := func(d time.Duration) time.Time { return t0.Add(d) }
		events := []struct {
			dev *Device
			ev  EventInput
		}{
			{dev, EventInput{Type: "driverCheckIn", Time: ms(0), PinCode: a.Code}},
			{dev, EventInput{Type: "accOn", Time: ms(time.Minute)}},
			{dev, EventInput{Type: "accOn", Time: ms(time.Minute)}}, // redelivery
			{dev, EventInput{Type: "driverCheckIn", Time: ms(20 * time.Minute), PinCode: b.Code}},
			{dev, EventInput{Type: "accOff", Time: ms(31 * time.Minute)}},
			{dev, EventInput{Type: "accOn", Time: ms(60 * time.Minute)}},
			{dev, EventInput{Type: "accOn", Time: ms(90 * time.Minute)}}, // closes the previous trip
			{other, EventInput{Type: "accOn", Time: ms(5 * time.Minute)}},
			{other, EventInput{Type: "accOff", Time: ms(6 * time.Minute)}},
		}
		for _, e := range events {
			f.update(func(tx *Tx) error {
				if _, err := tx.ApplyDriverEvent(e.dev, e.ev); err != nil {
					return err
				}
				return tx.ApplyTripEvent(e.dev, e.ev)
			})
		}
		// A GPS track along a meridian, a tenth of a degree of latitude apart; the
		// last point arrives after the first trip closed.
		var pts []GPSPoint
		for i := 0; i <= 3; i++ {
			pts = append(pts, GPSPoint{Time: t0.Add(time.Duration(5+5*i) * time.Minute), Lat: 48 + 0.1*float64(i), Lon: 11})
		}
		f.update(func(tx *Tx) error { _, err := tx.AddGPS(dev, pts[:3]); return err })
		f.update(func(tx *Tx) error { _, err := tx.AddGPS(dev, pts[3:]); return err })
		f.clock.Set(t0.Add(100 * time.Minute))
		f.view(func(tx *Tx) error {
			trips, n, err := tx.Trips(TripFilter{IMEI: dev.IMEI}, Page{})
			if err != nil || n != 3 {
				t.Fatalf("%d trips %v, want 3", n, err)
			}
			first := trips[0]
			if want := 3 * Haversine(48, 11, 48.1, 11); math.Abs(first.DistanceMeters-want) > 1 || want < 33000 {
				t.Errorf("first trip distance %.1f m, want %.1f m (with the late point)", first.DistanceMeters, want)
			}
			if !first.Start.Equal(t0.Add(time.Minute)) || !first.End.Equal(t0.Add(31*time.Minute)) || first.DriverID != a.ID ||
				first.Duration(tx.Now()) != 30*time.Minute || len(first.Drivers) != 2 || first.Drivers[1].DriverID != b.ID {
				t.Errorf("first trip %+v", first)
			}
			if !trips[1].End.Equal(t0.Add(90*time.Minute)) || !trips[2].End.IsZero() || trips[2].Duration(tx.Now()) != 10*time.Minute {
				t.Errorf("second and third trips %+v %+v", trips[1], trips[2])
			}
			tests := []struct {
				name string
				f    TripFilter
				want int
			}{
				{"organization", TripFilter{OrganizationIDs: map[int64]bool{f.org.ID: true}}, 4},
				{"other organization", TripFilter{OrganizationIDs: map[int64]bool{f.org.ID + 1: true}}, 0},
				{"driver a", TripFilter{OrganizationIDs: map[int64]bool{f.org.ID: true}, DriverID: a.ID}, 1},
				{"driver b drove three", TripFilter{OrganizationIDs: map[int64]bool{f.org.ID: true}, DriverID: b.ID}, 3},
				{"time range", TripFilter{OrganizationIDs: map[int64]bool{f.org.ID: true}, Start: t0.Add(40 * time.Minute), End: t0.Add(70 * time.Minute)}, 1},
				{"partner filter", TripFilter{PartnerID: f.partner.ID + 5}, 0},
			}
			for _, tt := range tests {
				if _, n, err := tx.Trips(tt.f, Page{}); err != nil || n != tt.want {
					t.Errorf("%s: %d trips %v, want %d", tt.name, n, err, tt.want)
				}
			}
			page, n, _ := tx.Trips(TripFilter{OrganizationIDs: map[int64]bool{f.org.ID: true}, Descending: true}, Page{Limit: 2, Offset: 1})
			if n != 4 || len(page) != 2 || !page[0].Start.Equal(t0.Add(60*time.Minute)) {
				t.Errorf("page %+v of %d", page, n)
			}
			return nil
		})
	})
}

// The retention purge keeps a trip still in progress however old it is, and
// the trip closes afterwards as any other.
func TestPurgeKeepsOpenTrip(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		dev := f.addDevice(1, f.org, f.partner.ID)
		t0 := f.clock.Now()
		f.update(func(tx *Tx) error {
			for _, ev := range []EventInput{
				{Type: TripStart, Time: t0}, {Type: TripEnd, Time: t0.Add(time.Hour)},
				{Type: TripStart, Time: t0.Add(2 * time.Hour)},
			} {
				if err := tx.ApplyTripEvent(dev, ev); err != nil {
					return err
				}
			}
			o, err := tx.Organization(f.org.ID)
			if err != nil {
				return err
			}
			o.Retention.PurgeDays = 3
			return tx.UpdateOrganization(o)
		})
		res, err := f.db.Purge(t.Context(), t0.AddDate(0, 0, 30), PurgeSettings{})
		if err != nil || res.Deleted["trips"] != 1 {
			t.Fatalf("purge deleted %v (%v), want the closed trip only", res.Deleted, err)
		}
		f.update(func(tx *Tx) error {
			return tx.ApplyTripEvent(dev, EventInput{Type: TripEnd, Time: t0.AddDate(0, 0, 30)})
		})
		f.view(func(tx *Tx) error {
			trips, n, err := tx.Trips(TripFilter{IMEI: dev.IMEI}, Page{})
			if err != nil || n != 1 || !trips[0].Start.Equal(t0.Add(2*time.Hour)) || !trips[0].End.Equal(t0.AddDate(0, 0, 30)) {
				t.Fatalf("trips after the purge %+v (%d, %v), want the open one, closed since", trips, n, err)
			}
			return nil
		})
	})
}
