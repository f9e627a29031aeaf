package postgres

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestMemo reads an organization's settings and webhook types twice in one
// transaction around writes of them: each read after a write sees it, and
// what a reader changes in the settings it was given is not what the next
// reader gets.
func TestMemo(t *testing.T) {
	e := trackEngine(t)
	f := seedTracks(t, e)
	ds := fullDeviceSettings("")
	s := &store.OrgSettings{OrganizationID: f.orgA, Device: ds.Device, Events: ds.Events, UpdatedAt: trackNow}
	write(t, e, func(r *tx) error {
		if err := r.OrganizationSettings().Put(s); err != nil {
			return err
		}
		got, err := r.OrganizationSettings().Get(f.orgA)
		if err != nil {
			return err
		}
		got.ForbidLegacyFirmware = true
		got.Events = nil
		again, err := r.OrganizationSettings().Get(f.orgA)
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Errorf("settings read again after a reader changed its copy: %+v, %v; want %+v", again, err, s)
		}
		for _, want := range []bool{false, true, false} {
			has, err := r.WebhookReceivers().Has(f.orgA, store.WebhookTypeGPS)
			if err != nil || has != want {
				t.Errorf("receives GPS: %v, %v; want %v", has, err, want)
			}
			types := []string{store.WebhookTypeGPS}
			if want {
				types = nil
			}
			if err := r.WebhookReceivers().Put(f.orgA, types); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestGPSReadAhead stores GPS batches of a device whose latest sample the
// transaction read ahead: a batch after it is queued rather than sent, the
// first point of each millisecond is the one stored, the latest sample but
// a batch's own is the one before it, and a batch with a point at or
// before the latest goes to the server and is answered by it.
func TestGPSReadAhead(t *testing.T) {
	e := trackEngine(t)
	f := seedTracks(t, e)
	imei := f.imeis[0]
	at := func(s int) time.Time { return trackNow.Add(time.Duration(s) * time.Second) }
	pt := func(s int, lat float64) store.GPSPoint { return store.GPSPoint{Time: at(s), Lat: lat, Lon: 4} }
	write(t, e, func(r *tx) error {
		_, err := r.GPSSamples().Insert(imei, 1, []store.GPSPoint{pt(0, 50)})
		return err
	})
	latestBut := func(r *tx, except []store.GPSPoint) time.Time {
		t.Helper()
		p, ok, err := r.GPSSamples().Latest(imei, time.Time{}, time.UnixMilli(math.MaxInt64), store.GPSFilter{Except: except})
		if err != nil || !ok {
			t.Fatalf("latest: %v, %v", ok, err)
		}
		return p.Time
	}
	write(t, e, func(r *tx) error {
		if err := r.Prefetch([]string{imei, f.imeis[1]}, at(60)); err != nil {
			return err
		}
		first := []store.GPSPoint{pt(1, 51), pt(1, 99), pt(2, 52)}
		stored, err := r.GPSSamples().Insert(imei, 1, first)
		if err != nil {
			return err
		}
		if want := []bool{true, false, true}; !slices.Equal(stored, want) {
			t.Errorf("stored %v, want %v", stored, want)
		}
		if q := len(pipeOf(r).queued); q != 1 {
			t.Errorf("%d statements queued after a batch past the latest sample, want 1", q)
		}
		if got := latestBut(r, []store.GPSPoint{first[0], first[2]}); !got.Equal(at(0)) {
			t.Errorf("latest but the first batch: %v, want %v", got, at(0))
		}
		second := []store.GPSPoint{pt(3, 53)}
		if _, err := r.GPSSamples().Insert(imei, 1, second); err != nil {
			return err
		}
		if got := latestBut(r, second); !got.Equal(at(2)) {
			t.Errorf("latest but the second batch: %v, want %v", got, at(2))
		}
		// A resent point: the server says which are new.
		third := []store.GPSPoint{pt(2, 77), pt(4, 54)}
		stored, err = r.GPSSamples().Insert(imei, 1, third)
		if err != nil {
			return err
		}
		if want := []bool{false, true}; !slices.Equal(stored, want) {
			t.Errorf("stored %v of a batch with a resent point, want %v", stored, want)
		}
		if got := latestBut(r, third[1:]); !got.Equal(at(3)) {
			t.Errorf("latest but the third batch: %v, want %v", got, at(3))
		}
		return nil
	})
	read(t, e, func(r *tx) error {
		got, err := r.GPSSamples().Range(imei, at(0), at(10), store.GPSFilter{}, 0)
		if err != nil {
			return err
		}
		var lats []float64
		for _, p := range got {
			lats = append(lats, p.Lat)
		}
		if want := []float64{50, 51, 52, 53, 54}; !slices.Equal(lats, want) {
			t.Errorf("stored samples %v, want %v", lats, want)
		}
		return nil
	})
}

// TestGPSReadAheadLosesToAConcurrentWriter: a point that another
// transaction stored, out of this one's sight, after this one read the
// latest sample ahead, makes the commit a serialisation conflict, and the
// transaction run again stores nothing over it.
func TestGPSReadAheadLosesToAConcurrentWriter(t *testing.T) {
	e := trackEngine(t)
	f := seedTracks(t, e)
	imei := f.imeis[0]
	at := func(s int) time.Time { return trackNow.Add(time.Duration(s) * time.Second) }
	write(t, e, func(r *tx) error {
		_, err := r.GPSSamples().Insert(imei, 1, []store.GPSPoint{{Time: at(0), Lat: 50}})
		return err
	})
	attempts := 0
	var stored []bool
	err := e.update(context.Background(), func(r *tx) error {
		attempts++
		if err := r.Prefetch([]string{imei}, at(60)); err != nil {
			return err
		}
		if attempts == 1 {
			write(t, e, func(other *tx) error {
				_, err := other.GPSSamples().Insert(imei, 1, []store.GPSPoint{{Time: at(1), Lat: 11}})
				return err
			})
		}
		var err error
		stored, err = r.GPSSamples().Insert(imei, 1, []store.GPSPoint{{Time: at(1), Lat: 22}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if attempts != 2 || !slices.Equal(stored, []bool{false}) {
		t.Errorf("%d attempts, stored %v; want 2 attempts, the second storing nothing", attempts, stored)
	}
	read(t, e, func(r *tx) error {
		p, ok, err := r.GPSSamples().Latest(imei, time.Time{}, time.UnixMilli(math.MaxInt64), store.GPSFilter{})
		if err != nil || !ok || p.Lat != 11 {
			t.Errorf("latest sample %+v, %v, %v; want the other transaction's (lat 11)", p, ok, err)
		}
		return nil
	})
}

// TestViewDevice reads a device's records in a view that read them ahead:
// what it asks for is answered from the one round trip, as an ordinary
// view answers it, and a view that asks for more runs again as an
// ordinary view.
func TestViewDevice(t *testing.T) {
	e := trackEngine(t)
	f := seedTracks(t, e)
	imei := f.imeis[0]
	cred := &store.DeviceCredential{IMEI: imei, TokenHash: []byte("0123456789abcdef0123456789abcdef"), IssuedAt: trackNow, Generation: 2}
	settings := &store.OrgSettings{OrganizationID: f.orgA, ForbidLegacyFirmware: true, UpdatedAt: trackNow}
	cmd := &store.QueuedCommand{ID: "c1", IMEI: imei, Name: "reboot", QueuedAt: trackNow}
	write(t, e, func(r *tx) error {
		if err := r.DeviceCredentials().Put(cred); err != nil {
			return err
		}
		if err := r.OrganizationSettings().Put(settings); err != nil {
			return err
		}
		return r.QueuedCommands().Add(cmd)
	})
	type seen struct {
		dev   *store.Device
		cred  *store.DeviceCredential
		os    *store.OrgSettings
		cmds  []store.QueuedCommand
		recvs bool
	}
	look := func(r store.Records) (seen, error) {
		var s seen
		var err error
		if s.dev, err = r.Devices().Get(imei); err != nil {
			return s, err
		}
		if s.cred, err = r.DeviceCredentials().Get(imei); err != nil {
			return s, err
		}
		if s.os, err = r.OrganizationSettings().Get(s.dev.OrganizationID); err != nil {
			return s, err
		}
		s.cmds, err = r.QueuedCommands().List(imei)
		return s, err
	}
	var want seen
	read(t, e, func(r *tx) error {
		var err error
		want, err = look(r)
		return err
	})
	if want.cred.Generation != 2 || !want.os.ForbidLegacyFirmware || len(want.cmds) != 1 {
		t.Fatalf("seeded records read back as %+v", want)
	}
	runs := 0
	var got seen
	err := e.ViewDevice(t.Context(), imei, func(r store.Records) error {
		runs++
		var err error
		got, err = look(r)
		if !pipeOf(r.(*tx)).ahead {
			t.Error("the view did not read ahead")
		}
		return err
	})
	if err != nil || runs != 1 || !reflect.DeepEqual(got, want) {
		t.Errorf("read ahead: %d runs, %v, %+v; want 1 run, %+v", runs, err, got, want)
	}

	// More than was read ahead: the view runs again, as an ordinary one.
	runs = 0
	var events []store.Event
	err = e.ViewDevice(t.Context(), imei, func(r store.Records) error {
		runs++
		var err error
		if got, err = look(r); err != nil {
			return err
		}
		events, err = r.Events().ByOrganizationBefore(f.orgA, trackNow, 10)
		return err
	})
	if err != nil || runs != 2 || !reflect.DeepEqual(got, want) || len(events) != 0 {
		t.Errorf("read beyond: %d runs, %v, %+v, %d events; want 2 runs, %+v, none", runs, err, got, len(events), want)
	}

	// A device that is not there reads as absent.
	err = e.ViewDevice(t.Context(), "359999999999999", func(r store.Records) error {
		_, err := r.Devices().Get("359999999999999")
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown device: %v, want not found", err)
	}
}
