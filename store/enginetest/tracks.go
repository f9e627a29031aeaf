package enginetest

import (
	"math"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// trackTests are the tests of GPS samples, device tracks, trips and the
// settings kept with them.
var trackTests = []test{
	{"GPSInsertKeepsOneSamplePerMillisecond", testGPSInsertKeepsOneSamplePerMillisecond},
	{"GPSRangeAndLatest", testGPSRangeAndLatest},
	{"GPSPurge", testGPSPurge},
	{"DeviceTracks", testDeviceTracks},
	{"TrackSettingsWhole", testTrackSettingsWhole},
	{"TripsInsertAtPut", testTripsInsertAtPut},
	{"TripsOpen", testTripsOpen},
	{"TripsByDeviceAndIMEIs", testTripsByDeviceAndIMEIs},
	{"TripsPurge", testTripsPurge},
}

// trackNow is the time the tests of the tracks group run at: an engine
// with partitions has those around it.
var trackNow = time.Date(2026, 3, 15, 9, 0, 0, 0, time.UTC)

// tracksFixture is the directory seedTracks inserts: organizations A and
// B of one partner, and devices of each.
type tracksFixture struct {
	orgA, orgB int64
	// imeis are devices 0 and 1 of A (ownerships 1 and 2), 2 of B
	// (ownership 3), in IMEI order.
	imeis []string
}

// seedTracks makes the engine's partitions around trackNow and inserts
// the directory records the tracks refer to.
func seedTracks(t *testing.T, e store.Engine) tracksFixture {
	t.Helper()
	maintain(t, e, trackNow)
	s := seeder{t, e, trackNow}
	partner := s.partner("P").ID
	org := func(name string) int64 {
		return s.organization(store.Organization{Name: name, PartnerID: partner, Retention: store.Retention{PurgeDays: 31}}).ID
	}
	f := tracksFixture{orgA: org("A"), orgB: org("B")}
	for i, o := range []int64{f.orgA, f.orgA, f.orgB} {
		s.device(store.Device{IMEI: testIMEI(i + 1), OrganizationID: o, PartnerID: partner, Ownership: int64(i + 1)})
		f.imeis = append(f.imeis, testIMEI(i+1))
	}
	return f
}

// GPSAt is the sample of the tests at second i after base, with every
// number set.
func GPSAt(base time.Time, i int) store.GPSPoint {
	return store.GPSPoint{Time: base.Add(time.Duration(i) * time.Second), Lat: 48 + float64(i)/100, Lon: -11.5,
		Alt: 512.25, Speed: float64(i), Accuracy: 3.5, Heading: 271.5}
}

// gpsTimes are the seconds after base of points.
func gpsTimes(base time.Time, points []store.GPSPoint) []int {
	out := []int{}
	for _, p := range points {
		out = append(out, int(p.Time.Sub(base)/time.Second))
	}
	return out
}

// insertOne stores the one sample p of imei and reports whether it did.
func insertOne(r store.Records, imei string, ownership int64, p store.GPSPoint) (bool, error) {
	stored, err := r.GPSSamples().Insert(imei, ownership, []store.GPSPoint{p})
	if err != nil {
		return false, err
	}
	return stored[0], nil
}

// testGPSInsertKeepsOneSamplePerMillisecond inserts a sample with
// nanoseconds, then another in its millisecond, which is not stored, and
// reads back the first, at its millisecond; a batch of points keeps the
// first of a millisecond too.
func testGPSInsertKeepsOneSamplePerMillisecond(t *testing.T, e store.Engine) {
	f := seedTracks(t, e)
	imei := f.imeis[0]
	p := GPSAt(trackNow, 0)
	p.Time = p.Time.Add(7*time.Millisecond + 654321*time.Nanosecond)
	write(t, e, func(r store.Records) error {
		for i, want := range []bool{true, false} {
			q := p
			q.Lat += float64(i)
			q.Time = q.Time.Add(-time.Duration(i) * 600 * time.Microsecond)
			if stored, err := insertOne(r, imei, 4, q); err != nil || stored != want {
				t.Errorf("insert %d: stored %v, %v; want %v", i, stored, err, want)
			}
		}
		// Another device has its own samples at the same millisecond.
		if stored, err := insertOne(r, f.imeis[1], 0, p); err != nil || !stored {
			t.Errorf("the same millisecond of another device: stored %v, %v", stored, err)
		}
		// One call: the first of a millisecond is stored, and one stored
		// before is not.
		q, dup := GPSAt(trackNow, 5), GPSAt(trackNow, 5)
		dup.Time, dup.Lat = dup.Time.Add(300*time.Microsecond), 1
		stored, err := r.GPSSamples().Insert(imei, 4, []store.GPSPoint{q, dup, p, GPSAt(trackNow, 6)})
		wantErr(t, "Insert of a batch", err, nil)
		wantEqual(t, "the batch's stored", stored, []bool{true, false, false, true})
		return nil
	})
	var got []store.GPSPoint
	read(t, e, func(r store.Records) (err error) {
		got, err = r.GPSSamples().Range(imei, time.Time{}, trackNow.AddDate(1, 0, 0), store.GPSFilter{}, 0)
		return err
	})
	first := p
	first.Time = trackNow.Add(7 * time.Millisecond)
	wantEqual(t, "the samples stored", got, []store.GPSPoint{first, GPSAt(trackNow, 5), GPSAt(trackNow, 6)})
}

// testGPSRangeAndLatest reads the samples of a device from start to end,
// both counted to the millisecond, with and without a limit, a holder and
// points to leave out, and the latest of them.
func testGPSRangeAndLatest(t *testing.T, e store.Engine) {
	f := seedTracks(t, e)
	imei, other := f.imeis[0], f.imeis[1]
	base := trackNow.Add(-time.Hour)
	// Samples 0 to 4 of ownership 5, 5 to 9 of ownership 7; samples 0 to 9
	// of the other device recorded before ownership numbers.
	write(t, e, func(r store.Records) error {
		for i := range 10 {
			own := int64(5)
			if i >= 5 {
				own = 7
			}
			if _, err := insertOne(r, imei, own, GPSAt(base, i)); err != nil {
				return err
			}
			if _, err := insertOne(r, other, 0, GPSAt(base, i)); err != nil {
				return err
			}
		}
		return nil
	})
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	endOfTime := time.UnixMilli(math.MaxInt64)
	// The holder of ownership 0 was added within sample 3's millisecond,
	// after it: samples from 4 on are its.
	newcomer := &store.Device{IMEI: other, CreatedAt: at(3).Add(500 * time.Microsecond)}
	cases := []struct {
		name       string
		imei       string
		start, end time.Time
		f          store.GPSFilter
		limit      int
		want       []int
	}{
		{"all", imei, time.Time{}, endOfTime, store.GPSFilter{}, 0, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"bounds to the millisecond", imei, at(2).Add(900 * time.Microsecond), at(6).Add(999 * time.Microsecond),
			store.GPSFilter{}, 0, []int{2, 3, 4, 5, 6}},
		{"bounds a millisecond off", imei, at(2).Add(time.Millisecond), at(6).Add(-time.Nanosecond),
			store.GPSFilter{}, 0, []int{3, 4, 5}},
		{"limit", imei, at(2), endOfTime, store.GPSFilter{}, 3, []int{2, 3, 4}},
		{"none", imei, at(10), endOfTime, store.GPSFilter{}, 0, []int{}},
		{"end before start", imei, at(5), at(4), store.GPSFilter{}, 0, []int{}},
		{"holder of ownership 7", imei, time.Time{}, endOfTime,
			store.GPSFilter{Holder: &store.Device{IMEI: imei, Ownership: 7}}, 0, []int{5, 6, 7, 8, 9}},
		{"holder of ownership 5", imei, time.Time{}, endOfTime,
			store.GPSFilter{Holder: &store.Device{IMEI: imei, Ownership: 5, CreatedAt: at(9)}}, 0, []int{0, 1, 2, 3, 4}},
		{"holder of no ownership", imei, time.Time{}, endOfTime,
			store.GPSFilter{Holder: &store.Device{IMEI: imei}}, 0, []int{}},
		{"holder before ownership numbers", other, time.Time{}, endOfTime,
			store.GPSFilter{Holder: newcomer}, 0, []int{4, 5, 6, 7, 8, 9}},
		{"holder before ownership numbers added at zero", other, time.Time{}, endOfTime,
			store.GPSFilter{Holder: &store.Device{IMEI: other}}, 0, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"except", imei, time.Time{}, endOfTime,
			store.GPSFilter{Except: []store.GPSPoint{{Time: at(9).Add(300 * time.Microsecond)}, {Time: at(0)}, {Time: at(4)}}},
			0, []int{1, 2, 3, 5, 6, 7, 8}},
		{"holder and except", imei, time.Time{}, endOfTime,
			store.GPSFilter{Holder: &store.Device{IMEI: imei, Ownership: 7}, Except: []store.GPSPoint{{Time: at(9)}}},
			2, []int{5, 6}},
		{"a device without samples", f.imeis[2], time.Time{}, endOfTime, store.GPSFilter{}, 0, []int{}},
	}
	read(t, e, func(r store.Records) error {
		for _, c := range cases {
			got, err := r.GPSSamples().Range(c.imei, c.start, c.end, c.f, c.limit)
			if err != nil {
				return err
			}
			wantEqual(t, c.name+": the range's samples", gpsTimes(base, got), c.want)
			if len(got) > 0 {
				wantEqual(t, c.name+": the range's first sample", got[0], GPSAt(base, c.want[0]))
			}
			if c.limit > 0 {
				continue
			}
			p, ok, err := r.GPSSamples().Latest(c.imei, c.start, c.end, c.f)
			if err != nil {
				return err
			}
			switch {
			case len(c.want) == 0 && ok:
				t.Errorf("%s: latest is %+v; want none", c.name, p)
			case len(c.want) > 0 && (!ok || p != GPSAt(base, c.want[len(c.want)-1])):
				t.Errorf("%s: latest is %+v, %v; want sample %d", c.name, p, ok, c.want[len(c.want)-1])
			}
		}
		return nil
	})
}

// testGPSPurge purges the samples of three devices in batches of four and
// finds gone exactly those the devices' cutoffs say are due, interleaved
// with those of an ownership whose organization keeps them longer.
func testGPSPurge(t *testing.T, e store.Engine) {
	f := seedTracks(t, e)
	base := trackNow.AddDate(0, -2, 0)
	cut := store.Cutoffs{f.orgA: base.Add(40 * time.Second), f.orgB: base.Add(20*time.Second + time.Nanosecond)}
	// Device 0: ownership 1 of A (even samples) and 2 of B (odd ones).
	// Device 1: ownership 3 of A (even), and 4 of an organization without
	// a cutoff (odd). Device 2: ownership 0, of no organization it names.
	owners := map[string]*store.OwnerCutoffs{
		f.imeis[0]: OwnerCutoffs(t, cut, map[int64]int64{1: f.orgA, 2: f.orgB}),
		f.imeis[1]: OwnerCutoffs(t, cut, map[int64]int64{3: f.orgA, 4: 99}),
	}
	write(t, e, func(r store.Records) error {
		for d, imei := range f.imeis {
			for i := range 60 {
				own := []int64{1 + int64(i%2), 3 + int64(i%2), 0}[d]
				if _, err := insertOne(r, imei, own, GPSAt(base, i)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	deleted, batches := purgeAll(t, e, 4, func(r store.Records, from []byte) (int, []byte, error) {
		return r.GPSSamples().Purge(SeriesPurge(owners, from, 4))
	})
	// Device 0: evens 0 to 38 and odds 1 to 19; device 1: evens 0 to 38.
	if deleted != 50 || batches < 13 {
		t.Errorf("purged %d samples in %d batches; want 50 in batches of 4", deleted, batches)
	}
	want := map[string][]int{
		f.imeis[0]: {21, 23, 25, 27, 29, 31, 33, 35, 37, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56,
			57, 58, 59},
		f.imeis[1]: {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37, 39, 40, 41, 42, 43, 44, 45, 46, 47,
			48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59},
		f.imeis[2]: {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
			29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57,
			58, 59},
	}
	read(t, e, func(r store.Records) error {
		for _, imei := range f.imeis {
			got, err := r.GPSSamples().Range(imei, time.Time{}, trackNow, store.GPSFilter{}, 0)
			if err != nil {
				return err
			}
			wantEqual(t, "the samples kept of "+imei, gpsTimes(base, got), want[imei])
		}
		return nil
	})
	// A purge without a limit deletes in one batch; nothing is left due.
	if n, batches := purgeAll(t, e, math.MaxInt, func(r store.Records, from []byte) (int, []byte, error) {
		return r.GPSSamples().Purge(SeriesPurge(owners, from, 0))
	}); n != 0 || batches != 1 {
		t.Errorf("a second purge deleted %d in %d batches; want nothing in one", n, batches)
	}
}

// testDeviceTracks stores, replaces and forgets device tracks; a track
// without transitions reads back as it was put, without them.
func testDeviceTracks(t *testing.T, e store.Engine) {
	f := seedTracks(t, e)
	imei := f.imeis[0]
	track := &store.DeviceTrack{OverLimit: true, Fences: map[int64][]store.FenceTransition{
		3: {{Time: trackNow.Add(123456 * time.Microsecond), Inside: true}},
		1 << 40: {{Time: trackNow, Inside: false}, {Time: trackNow.Add(time.Second), Inside: true},
			{Time: trackNow.Add(2 * time.Second), Inside: false}},
	}}
	get := func(imei string) (*store.DeviceTrack, error) {
		t.Helper()
		var got *store.DeviceTrack
		err := e.View(t.Context(), func(r store.Records) (err error) { got, err = r.DeviceTracks().Get(imei); return err })
		return got, err
	}
	_, err := get(imei)
	wantErr(t, "the track of a device without one", err, store.ErrNotFound)
	write(t, e, func(r store.Records) error {
		if err := r.DeviceTracks().Delete(imei); err != nil { // forgetting none
			return err
		}
		if err := r.DeviceTracks().Put(imei, track); err != nil {
			return err
		}
		if err := r.DeviceTracks().Put(f.imeis[1], &store.DeviceTrack{Fences: map[int64][]store.FenceTransition{}}); err != nil {
			return err
		}
		return r.DeviceTracks().Put(f.imeis[2], &store.DeviceTrack{OverLimit: true})
	})
	for _, c := range []struct {
		imei string
		want *store.DeviceTrack
	}{{imei, track}, {f.imeis[1], &store.DeviceTrack{}}, {f.imeis[2], &store.DeviceTrack{OverLimit: true}}} {
		got, err := get(c.imei)
		wantErr(t, "the track of "+c.imei, err, nil)
		wantEqual(t, "the track of "+c.imei, got, c.want)
	}
	write(t, e, func(r store.Records) error { return r.DeviceTracks().Put(imei, &store.DeviceTrack{}) })
	got, err := get(imei)
	wantErr(t, "the replaced track", err, nil)
	wantEqual(t, "the replaced track", got, &store.DeviceTrack{})
	write(t, e, func(r store.Records) error { return r.DeviceTracks().Delete(imei) })
	_, err = get(imei)
	wantErr(t, "a forgotten track", err, store.ErrNotFound)
	got, err = get(f.imeis[2])
	wantErr(t, "another device's track", err, nil)
	wantEqual(t, "another device's track", got, &store.DeviceTrack{OverLimit: true})
}

// FullDeviceSettings are device settings with every part.
func FullDeviceSettings(imei string) *store.DeviceSettings {
	yes, five := true, 5
	return &store.DeviceSettings{IMEI: imei, Version: 7,
		Device: &store.DeviceConfig{AudioAlarms: true, Brightness: 200, DriverPosition: "right", StandbyMinutes: 30},
		Events: &store.EventConfig{VehicleType: "Van", SpeedLimitKmh: 90, Events: map[string]store.EventSetting{
			"harshBraking": {Enabled: true, DataType: "video", VisualAlert: &yes, MinimumSpeedKmh: &five, Weight: 3}}},
		Privacy: &store.PrivacyConfig{RecordingEnabled: true, GPSEnabled: true, Cameras: map[int]bool{2: false},
			CameraRecording: map[int]bool{1: true}},
		PrivacyMode:       store.PrivacyModeOn,
		PrivacyModeConfig: &store.PrivacyModeConfig{GPSTracking: true, OtherEvents: true},
		Geofences: []store.Geofence{{ID: 1, Name: "Depot", Lat: 48.1, Lon: 11.5, Radius: 250},
			{ID: 2, Name: "Yard «Süd»", Lat: -33.9, Lon: 151.2, Radius: 1000}},
		UpdatedAt: trackNow.Add(987654 * time.Microsecond),
	}
}

// testTrackSettingsWhole stores hotspot states and device and
// organization settings with every part and with none, and replaces each
// whole (the keyed tests store, replace and delete them one record
// apiece).
func testTrackSettingsWhole(t *testing.T, e store.Engine) {
	f := seedTracks(t, e)
	imei := f.imeis[0]

	// Hotspots: a password set, the factory default, one never switched on.
	on := &store.HotspotState{IMEI: imei, On: true, Password: "Secret12pass", PasswordChangedAt: trackNow.Add(time.Microsecond)}
	reset := &store.HotspotState{IMEI: imei, On: true, PasswordChangedAt: trackNow.Add(time.Hour)}
	off := &store.HotspotState{IMEI: f.imeis[1]}
	for _, h := range []*store.HotspotState{on, reset, off} {
		write(t, e, func(r store.Records) error { return r.Hotspots().Put(h) })
		var got *store.HotspotState
		read(t, e, func(r store.Records) (err error) { got, err = r.Hotspots().Get(h.IMEI); return err })
		wantEqual(t, "hotspot", got, h)
	}

	// Device settings: every part, none, and an empty list of geofences,
	// which reads back as none.
	full := FullDeviceSettings(imei)
	bare := &store.DeviceSettings{IMEI: imei, Version: 8}
	for _, s := range []*store.DeviceSettings{full, bare} {
		write(t, e, func(r store.Records) error { return r.DeviceSettings().Put(s) })
		var got *store.DeviceSettings
		read(t, e, func(r store.Records) (err error) { got, err = r.DeviceSettings().Get(imei); return err })
		wantEqual(t, "device settings", got, s)
	}
	empty := &store.DeviceSettings{IMEI: f.imeis[1], Geofences: []store.Geofence{}, PrivacyMode: store.PrivacyModeOff}
	write(t, e, func(r store.Records) error { return r.DeviceSettings().Put(empty) })
	var got *store.DeviceSettings
	read(t, e, func(r store.Records) (err error) { got, err = r.DeviceSettings().Get(f.imeis[1]); return err })
	wantEqual(t, "settings without geofences", got, &store.DeviceSettings{IMEI: f.imeis[1], PrivacyMode: store.PrivacyModeOff})

	// Organization settings: every part, then none.
	ds := FullDeviceSettings("")
	fullOrg := &store.OrgSettings{OrganizationID: f.orgA, Device: ds.Device, Events: ds.Events, Privacy: ds.Privacy,
		PrivacyModeConfig: ds.PrivacyModeConfig, ForbidLegacyFirmware: true, UpdatedAt: ds.UpdatedAt}
	bareOrg := &store.OrgSettings{OrganizationID: f.orgA, UpdatedAt: trackNow}
	for _, s := range []*store.OrgSettings{fullOrg, bareOrg} {
		write(t, e, func(r store.Records) error { return r.OrganizationSettings().Put(s) })
		var got *store.OrgSettings
		read(t, e, func(r store.Records) (err error) { got, err = r.OrganizationSettings().Get(f.orgA); return err })
		wantEqual(t, "organization settings", got, s)
	}
	err := e.View(t.Context(), func(r store.Records) error { _, err := r.OrganizationSettings().Get(f.orgB); return err })
	wantErr(t, "the settings of the other organization", err, store.ErrNotFound)
}

// tripIDs are the ids of trips.
func tripIDs(trips []store.Trip) []int64 {
	out := []int64{}
	for _, t := range trips {
		out = append(out, t.ID)
	}
	return out
}

// tripAt returns the trip of imei started at start's millisecond.
func tripAt(t *testing.T, e store.Engine, imei string, start time.Time) (*store.Trip, error) {
	t.Helper()
	var got *store.Trip
	err := e.View(t.Context(), func(r store.Records) (err error) { got, err = r.Trips().At(imei, start); return err })
	return got, err
}

// testTripsInsertAtPut inserts trips under increasing ids, refuses a
// second trip of a device in one millisecond (leaving the transaction
// usable), finds each by its start's millisecond and replaces one.
func testTripsInsertAtPut(t *testing.T, e store.Engine) {
	f := seedTracks(t, e)
	imei := f.imeis[0]
	start := trackNow.Add(-2*time.Hour + 123456*time.Microsecond) // ms 123, µs 456
	first := &store.Trip{IMEI: imei, OrganizationID: f.orgA, Start: start, DriverID: 42, Ownership: 1}
	second := &store.Trip{IMEI: imei, OrganizationID: f.orgA, Start: start.Add(time.Millisecond)}
	other := &store.Trip{IMEI: f.imeis[2], OrganizationID: f.orgB, Start: start, Ownership: 3}
	write(t, e, func(r store.Records) error {
		for _, trip := range []*store.Trip{first, second, other} {
			if err := r.Trips().Insert(trip); err != nil {
				return err
			}
		}
		again := &store.Trip{IMEI: imei, OrganizationID: f.orgB, Start: start.Add(-456 * time.Microsecond)}
		wantErr(t, "a second trip in the millisecond", r.Trips().Insert(again), store.ErrConflict)
		// The transaction goes on.
		got, err := r.Trips().At(imei, start.Add(500*time.Microsecond))
		if err != nil {
			return err
		}
		wantEqual(t, "the trip in the transaction", got, first)
		return nil
	})
	if !increasing([]int64{first.ID, second.ID, other.ID}) {
		t.Errorf("trip ids %d, %d, %d; want them growing", first.ID, second.ID, other.ID)
	}
	_, err := tripAt(t, e, imei, start.Add(-time.Millisecond))
	wantErr(t, "a trip at a millisecond without one", err, store.ErrNotFound)
	_, err = tripAt(t, e, f.imeis[1], start)
	wantErr(t, "a trip of a device without one", err, store.ErrNotFound)
	for _, want := range []*store.Trip{first, second, other} {
		got, err := tripAt(t, e, want.IMEI, want.Start)
		wantErr(t, "At", err, nil)
		wantEqual(t, "At", got, want)
	}
	closed := *first
	closed.End, closed.DistanceMeters, closed.DriverID = start.Add(time.Hour+7*time.Microsecond), 12345.5, 0
	write(t, e, func(r store.Records) error {
		if err := r.Trips().Put(&closed); err != nil {
			return err
		}
		missing := closed
		missing.Start = start.Add(time.Second)
		wantErr(t, "replacing a trip not stored", r.Trips().Put(&missing), store.ErrNotFound)
		return nil
	})
	got, err := tripAt(t, e, imei, start)
	wantErr(t, "the replaced trip", err, nil)
	wantEqual(t, "the replaced trip", got, &closed)
	// Ids are not reused.
	later := &store.Trip{IMEI: f.imeis[1], OrganizationID: f.orgA, Start: start}
	write(t, e, func(r store.Records) error { return r.Trips().Insert(later) })
	if later.ID <= other.ID {
		t.Errorf("a later trip's id %d; want above %d", later.ID, other.ID)
	}
}

// testTripsOpen opens, moves and clears the open trip of a device: it is
// one of its stored trips, at most one at a time, and the trips stay.
func testTripsOpen(t *testing.T, e store.Engine) {
	f := seedTracks(t, e)
	imei := f.imeis[0]
	a := &store.Trip{IMEI: imei, OrganizationID: f.orgA, Start: trackNow.Add(-3 * time.Hour)}
	b := &store.Trip{IMEI: imei, OrganizationID: f.orgA, Start: trackNow.Add(-time.Hour)}
	c := &store.Trip{IMEI: f.imeis[1], OrganizationID: f.orgA, Start: trackNow.Add(-time.Hour)}
	open := func(r store.Records, imei string, want *store.Trip) {
		t.Helper()
		got, err := r.Trips().Open(imei)
		switch {
		case want == nil:
			wantErr(t, "the open trip of "+imei, err, store.ErrNotFound)
		case err != nil:
			t.Errorf("the open trip of %s: %v; want %+v", imei, err, *want)
		default:
			wantEqual(t, "the open trip of "+imei, got, want)
		}
	}
	write(t, e, func(r store.Records) error {
		for _, trip := range []*store.Trip{a, b, c} {
			if err := r.Trips().Insert(trip); err != nil {
				return err
			}
		}
		open(r, imei, nil)
		if err := r.Trips().SetOpen(a); err != nil {
			return err
		}
		if err := r.Trips().SetOpen(c); err != nil {
			return err
		}
		open(r, imei, a)
		if err := r.Trips().SetOpen(a); err != nil { // again
			return err
		}
		open(r, imei, a)
		if err := r.Trips().SetOpen(b); err != nil {
			return err
		}
		unstored := &store.Trip{IMEI: imei, Start: trackNow}
		wantErr(t, "opening a trip not stored", r.Trips().SetOpen(unstored), store.ErrNotFound)
		return nil
	})
	read(t, e, func(r store.Records) error {
		open(r, imei, b)
		open(r, f.imeis[1], c)
		open(r, f.imeis[2], nil)
		return nil
	})
	write(t, e, func(r store.Records) error {
		for range 2 { // clearing none is no error
			if err := r.Trips().ClearOpen(imei); err != nil {
				return err
			}
		}
		return nil
	})
	read(t, e, func(r store.Records) error {
		open(r, imei, nil)
		open(r, f.imeis[1], c)
		got, err := r.Trips().ByDevice(imei, time.Time{}, time.Time{})
		wantEqual(t, "the device's trips after clearing its open trip", tripIDs(got), []int64{a.ID, b.ID})
		return err
	})
}

// testTripsByDeviceAndIMEIs lists the trips of a device overlapping a
// span, to the nanosecond at its ends, an open trip ending never, and the
// devices that have trips.
func testTripsByDeviceAndIMEIs(t *testing.T, e store.Engine) {
	f := seedTracks(t, e)
	imei := f.imeis[1]
	h := func(n float64) time.Time { return trackNow.Add(time.Duration(n * float64(time.Hour))) }
	// Inserted out of order: ByDevice sorts by start.
	trips := map[string]*store.Trip{
		"b": {IMEI: imei, OrganizationID: f.orgA, Start: h(3), End: h(4)},
		"a": {IMEI: imei, OrganizationID: f.orgA, Start: h(1), End: h(2)},
		"c": {IMEI: imei, OrganizationID: f.orgA, Start: h(5)},
	}
	imeis := func() []string {
		t.Helper()
		var got []string
		read(t, e, func(r store.Records) (err error) { got, err = r.Trips().IMEIs(); return err })
		return got
	}
	if got := imeis(); len(got) != 0 {
		t.Errorf("devices with trips before any: %v", got)
	}
	write(t, e, func(r store.Records) error {
		for _, name := range []string{"b", "a", "c"} {
			if err := r.Trips().Insert(trips[name]); err != nil {
				return err
			}
		}
		for _, imei := range []string{f.imeis[2], f.imeis[0]} {
			if err := r.Trips().Insert(&store.Trip{IMEI: imei, OrganizationID: f.orgB, Start: h(1)}); err != nil {
				return err
			}
		}
		return nil
	})
	cases := []struct {
		start, end time.Time
		want       string
	}{
		{time.Time{}, time.Time{}, "abc"},
		{h(2.5), time.Time{}, "bc"},
		{h(2), time.Time{}, "abc"},
		{h(2).Add(time.Nanosecond), time.Time{}, "bc"},
		{time.Time{}, h(3), "ab"},
		{time.Time{}, h(3).Add(-time.Nanosecond), "a"},
		{h(2).Add(time.Nanosecond), h(3).Add(-time.Nanosecond), ""},
		{h(10), h(11), "c"},
		{time.Time{}, h(0.5), ""},
		{time.Time{}, time.UnixMilli(1 << 62), "abc"},
	}
	read(t, e, func(r store.Records) error {
		for _, c := range cases {
			got, err := r.Trips().ByDevice(imei, c.start, c.end)
			if err != nil {
				return err
			}
			want := []store.Trip{}
			for _, name := range c.want {
				want = append(want, *trips[string(name)])
			}
			if len(got) != len(want) || (len(want) > 0 && !equalTrips(got, want)) {
				t.Errorf("trips from %s to %s: %v; want %v (%s)", c.start, c.end, tripIDs(got), tripIDs(want), c.want)
			}
		}
		return nil
	})
	wantEqual(t, "devices with trips", imeis(), []string{f.imeis[0], f.imeis[1], f.imeis[2]})
}

// equalTrips reports whether got and want are the same trips in the same
// order.
func equalTrips(got, want []store.Trip) bool {
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return len(got) == len(want)
}

// testTripsPurge purges trips in batches of five: gone are those the
// devices' cutoffs say are due, each compared by its start's millisecond,
// except each device's open trip.
func testTripsPurge(t *testing.T, e store.Engine) {
	f := seedTracks(t, e)
	base := trackNow.AddDate(0, -2, 0)
	cut := store.Cutoffs{f.orgA: base.Add(30 * time.Minute), f.orgB: base.Add(10*time.Minute + 500*time.Microsecond)}
	// Device 0: ownership 1 of A (even trips) and 2 of B (odd ones), its
	// trip 4 open; device 1: no cutoffs; device 2: ownership 3 of B.
	owners := map[string]*store.OwnerCutoffs{
		f.imeis[0]: OwnerCutoffs(t, cut, map[int64]int64{1: f.orgA, 2: f.orgB}),
		f.imeis[2]: OwnerCutoffs(t, cut, map[int64]int64{3: f.orgB}),
	}
	write(t, e, func(r store.Records) error {
		for d, imei := range f.imeis {
			for i := range 40 {
				own := []int64{1 + int64(i%2), 1 + int64(i%2), 3}[d]
				// Starts with microseconds: the purge compares their
				// milliseconds with the cutoffs, as the keys of trips count.
				trip := &store.Trip{IMEI: imei, OrganizationID: f.orgA, Ownership: own,
					Start: base.Add(time.Duration(i)*time.Minute + 700*time.Microsecond)}
				if err := r.Trips().Insert(trip); err != nil {
					return err
				}
				if d == 0 && i == 4 {
					if err := r.Trips().SetOpen(trip); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	deleted, batches := purgeAll(t, e, 5, func(r store.Records, from []byte) (int, []byte, error) {
		return r.Trips().Purge(SeriesPurge(owners, from, 5))
	})
	// Device 0: evens 0 to 28 but the open 4, odds 1 to 9; device 2: 0 to
	// 10 (10 starts before B's cutoff to the millisecond).
	if deleted != 30 || batches < 6 {
		t.Errorf("purged %d trips in %d batches; want 30 in batches of 5", deleted, batches)
	}
	all := make([]int, 40)
	for i := range all {
		all[i] = i
	}
	want := map[string][]int{
		f.imeis[0]: {4, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39},
		f.imeis[1]: all,
		f.imeis[2]: {11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37,
			38, 39},
	}
	read(t, e, func(r store.Records) error {
		for _, imei := range f.imeis {
			trips, err := r.Trips().ByDevice(imei, time.Time{}, time.Time{})
			if err != nil {
				return err
			}
			kept := []int{}
			for _, trip := range trips {
				kept = append(kept, int(trip.Start.Sub(base)/time.Minute))
			}
			wantEqual(t, "the trips kept of "+imei, kept, want[imei])
		}
		open, err := r.Trips().Open(f.imeis[0])
		if err != nil || !open.Start.Equal(base.Add(4*time.Minute+700*time.Microsecond)) {
			t.Errorf("the open trip after the purge: %+v, %v; want trip 4", open, err)
		}
		return nil
	})
}
