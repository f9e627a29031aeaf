package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fleetcam/fleetcam/store"
)

// TestMemo reads an organization's settings and webhook types twice in one
// transaction around writes of them: each read after a write sees it, and
// what a reader changes in the settings it was given is not what the next
// reader gets.
func TestMemo(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
		if err := r.Prefetch(store.ReadAhead{IMEIs: []string{imei, f.imeis[1]}, Now: at(60)}); err != nil {
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
	t.Parallel()
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
		if err := r.Prefetch(store.ReadAhead{IMEIs: []string{imei}, Now: at(60)}); err != nil {
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

// TestPrefetchTakesTheKnownLatestGPS: a group commit given the latest
// GPS sample a device's connection knows takes it for the device's latest
// sample rather than read it, so that a sample the database holds but the
// connection's differs from is not what the transaction answers; one
// older than knownGPSAhead is read, as is the sample of a device whose
// connection knows none; and what the transaction stores after it is what
// it then knows.
func TestPrefetchTakesTheKnownLatestGPS(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	known, old, unknown := f.imeis[0], f.imeis[1], f.imeis[2]
	at := func(s int) time.Time { return trackNow.Add(time.Duration(s) * time.Second) }
	now := at(3600)
	write(t, e, func(r *tx) error {
		for _, imei := range []string{known, old, unknown} {
			if _, err := r.GPSSamples().Insert(imei, 1, []store.GPSPoint{{Time: at(10), Lat: 10}}); err != nil {
				return err
			}
		}
		return nil
	})
	latest := func(r *tx, imei string) store.GPSPoint {
		t.Helper()
		p, ok, err := r.GPSSamples().Latest(imei, time.Time{}, time.UnixMilli(math.MaxInt64), store.GPSFilter{})
		if err != nil || !ok {
			t.Fatalf("latest sample of %s: %v, %v", imei, ok, err)
		}
		return p
	}
	write(t, e, func(r *tx) error {
		err := r.Prefetch(store.ReadAhead{IMEIs: []string{known, old, unknown}, Now: now, LatestGPS: map[string]store.LatestGPS{
			known: {Point: store.GPSPoint{Time: at(5), Lat: 5}, Ownership: 1},
			old:   {Point: store.GPSPoint{Time: now.Add(-knownGPSAhead - time.Second), Lat: 5}, Ownership: 1},
		}})
		if err != nil {
			return err
		}
		if p := latest(r, known); p.Lat != 5 || !p.Time.Equal(at(5)) {
			t.Errorf("latest sample of the device whose connection knows one: %+v, want the known one (lat 5 at %v)", p, at(5))
		}
		for _, imei := range []string{old, unknown} {
			if p := latest(r, imei); p.Lat != 10 {
				t.Errorf("latest sample of %s: %+v, want the stored one (lat 10)", imei, p)
			}
		}
		if _, err := r.GPSSamples().Insert(known, 1, []store.GPSPoint{{Time: at(20), Lat: 20}}); err != nil {
			return err
		}
		if k, ok := r.KnownLatestGPS(known); !ok || k.Point.Lat != 20 || !k.Point.Time.Equal(at(20)) || k.Ownership != 1 {
			t.Errorf("known latest sample after an insert: %+v, %v; want lat 20 at %v of ownership 1", k, ok, at(20))
		}
		return nil
	})
	read(t, e, func(r *tx) error {
		if k, ok := r.KnownLatestGPS(known); ok {
			t.Errorf("a transaction that read nothing knows a latest sample: %+v", k)
		}
		return nil
	})
}

// TestViewDevice reads a device's records in a view that read them ahead:
// what it asks for is answered from the one round trip, as an ordinary
// view answers it, and a view that asks for more runs again as an
// ordinary view.
func TestViewDevice(t *testing.T) {
	t.Parallel()
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
	err := e.ViewDevice(t.Context(), imei, 0, func(r store.Records) error {
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
	err = e.ViewDevice(t.Context(), imei, 0, func(r store.Records) error {
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
	err = e.ViewDevice(t.Context(), "359999999999999", 0, func(r store.Records) error {
		_, err := r.Devices().Get("359999999999999")
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown device: %v, want not found", err)
	}
}

// TestViewDeviceReadsDriverCredentialsAhead reads what a device's
// configuration carries of its drivers in views that read them ahead
// (ViewDriverCredentials): a device without assignments gets its
// organization's active drivers, one with assignments the drivers they
// name, each in one run; a device whose configuration is acknowledged at
// its settings' version is not given its organization's drivers, and a
// view that lists them then runs again.
func TestViewDeviceReadsDriverCredentialsAhead(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	free, assigned := f.imeis[0], f.imeis[1]
	var ds []*store.Driver
	write(t, e, func(r *tx) error {
		for i, active := range []bool{true, false, true} {
			d := &store.Driver{OrganizationID: f.orgA, ThirdPartyID: fmt.Sprint("t", i), Code: fmt.Sprintf("1000%d", i),
				QRPayload: fmt.Sprint("qr", i), IsActive: active, CreatedAt: trackNow, UpdatedAt: trackNow}
			if err := r.Drivers().Insert(d); err != nil {
				return err
			}
			ds = append(ds, d)
		}
		return r.DriverAssignments().Insert(&store.DriverAssignment{OrganizationID: f.orgA, DriverID: ds[1].ID,
			IMEI: assigned, Start: trackNow, CreatedAt: trackNow})
	})
	active := true
	activeOfOrg := store.DriverFilter{OrganizationIDs: map[int64]bool{f.orgA: true}, IsActive: &active}
	view := func(imei string, look func(r store.Records) error) int {
		t.Helper()
		runs := 0
		err := e.ViewDevice(t.Context(), imei, store.ViewDriverCredentials, func(r store.Records) error {
			runs++
			return look(r)
		})
		if err != nil {
			t.Fatal(err)
		}
		return runs
	}
	var ids []int64
	listActive := func(r store.Records) error {
		as, err := r.DriverAssignments().ByDevice(free)
		if err != nil || len(as) != 0 {
			return fmt.Errorf("assignments of the free device: %v, %v", as, err)
		}
		got, total, err := r.Drivers().List(activeOfOrg, store.Sort{}, store.Page{})
		ids = ids[:0]
		for _, d := range got {
			ids = append(ids, d.ID)
		}
		if err == nil && total != len(got) {
			err = fmt.Errorf("total %d of %d drivers", total, len(got))
		}
		return err
	}
	if runs := view(free, listActive); runs != 1 || !slices.Equal(ids, []int64{ds[0].ID, ds[2].ID}) {
		t.Errorf("active drivers of a device without assignments: %d runs, %v; want 1 run, %d and %d", runs, ids, ds[0].ID, ds[2].ID)
	}
	var named *store.Driver
	runs := view(assigned, func(r store.Records) error {
		as, err := r.DriverAssignments().ByDevice(assigned)
		if err != nil || len(as) != 1 {
			return fmt.Errorf("assignments: %v, %v", as, err)
		}
		named, err = r.Drivers().Get(as[0].DriverID)
		return err
	})
	if runs != 1 || named.ID != ds[1].ID || named.QRPayload != "qr1" || named.IsActive {
		t.Errorf("the assigned driver: %d runs, %+v; want 1 run and driver %d", runs, named, ds[1].ID)
	}

	// Acknowledged at its settings' version: nothing is due, and the
	// organization's drivers are not read ahead.
	write(t, e, func(r *tx) error {
		if err := r.DeviceSettings().Put(&store.DeviceSettings{IMEI: free, Version: 3}); err != nil {
			return err
		}
		return r.DeviceLinks().Put(&store.DeviceLink{IMEI: free, AckedConfigVersion: 3, ConfigAckedAt: trackNow})
	})
	if runs := view(free, listActive); runs != 2 || !slices.Equal(ids, []int64{ds[0].ID, ds[2].ID}) {
		t.Errorf("active drivers of a device whose configuration is acknowledged: %d runs, %v; want 2 runs, the same drivers", runs, ids)
	}
}

// TestWebhookRoutingMemo reads an organization's webhook settings, secret,
// endpoints and subscriptions twice in one transaction around writes of
// them: the second read costs no round trip, and a read after a write
// sees it.
func TestWebhookRoutingMemo(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	org, imei := f.orgA, f.imeis[0]
	const url = "https://example.com/hook"
	write(t, e, func(r *tx) error {
		p := pipeOf(r)
		readAll := func() (*store.WebhookSettings, []store.WebhookSubscription, error) {
			s, err := r.WebhookSettings().Get(org)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, nil, err
			}
			if _, err := r.WebhookSecrets().Get(org); err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, nil, err
			}
			if _, err := r.WebhookEndpoints().Get(org, url); err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, nil, err
			}
			subs, err := r.WebhookSubscriptions().List(org, imei)
			return s, subs, err
		}
		if _, _, err := readAll(); err != nil {
			return err
		}
		trips := p.trips
		if _, _, err := readAll(); err != nil {
			return err
		}
		if p.trips != trips {
			t.Errorf("%d round trips to read the webhook records again", p.trips-trips)
		}
		settings := store.DefaultWebhookSettings(org)
		settings.GPSURLs = []string{url}
		sub := &store.WebhookSubscription{OrganizationID: org, IMEI: imei, URL: url, Type: store.WebhookTypeEvent,
			CreatedAt: trackNow, UpdatedAt: trackNow}
		err := errors.Join(r.WebhookSettings().Put(settings), r.WebhookSubscriptions().Insert(sub),
			r.WebhookSecrets().Put(&store.WebhookSecret{OrganizationID: org, Salt: []byte("salt"), CreatedAt: trackNow}),
			r.WebhookEndpoints().Put(&store.WebhookEndpoint{OrganizationID: org, URL: url, Disabled: true}))
		if err != nil {
			return err
		}
		s, subs, err := readAll()
		if err != nil {
			return err
		}
		if !slices.Equal(s.GPSURLs, []string{url}) || len(subs) != 1 || subs[0].ID != sub.ID {
			t.Errorf("read after the writes: settings %+v, subscriptions %+v", s, subs)
		}
		if others, err := r.WebhookSubscriptions().List(org, f.imeis[1]); err != nil || len(others) != 0 {
			t.Errorf("another device's subscriptions: %+v, %v", others, err)
		}
		if ep, err := r.WebhookEndpoints().Get(org, url); err != nil || !ep.Disabled {
			t.Errorf("endpoint after its write: %+v, %v", ep, err)
		}
		if sec, err := r.WebhookSecrets().Get(org); err != nil || string(sec.Salt) != "salt" {
			t.Errorf("secret after its write: %+v, %v", sec, err)
		}
		return nil
	})
}

// TestEventReadAhead asks what an event's rules ask of a device whose rows
// a group commit read ahead: the device's GPS position at the event's time
// and its driver session then are answered without a round trip when the
// latest sample and session read ahead tell, and by the server otherwise,
// with the same answers an ordinary transaction gives.
func TestEventReadAhead(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	imei, quiet := f.imeis[0], f.imeis[1]
	at := func(s int) time.Time { return trackNow.Add(time.Duration(s) * time.Second) }
	write(t, e, func(r *tx) error {
		// Recorded for the device's ownership (seedTracks: 1).
		if _, err := r.GPSSamples().Insert(imei, 1, []store.GPSPoint{{Time: at(0), Lat: 50, Lon: 4}, {Time: at(10), Lat: 51, Lon: 4}}); err != nil {
			return err
		}
		return r.DriverSessions().Begin(&store.DriverSession{IMEI: imei, OrganizationID: f.orgA, DriverID: 7,
			Start: at(5), Method: "pin"})
	})
	type answers struct {
		pos                  []float64
		session, sessionLate *store.DriverSession
	}
	ask := func(r *tx) (answers, error) {
		var a answers
		dev, err := r.Devices().Get(imei)
		if err != nil {
			return a, err
		}
		mine := store.GPSFilter{Holder: dev}
		for _, q := range [][2]time.Time{{at(-60), at(20)}, {at(-60), at(5)}, {at(20), at(30)}} {
			p, ok, err := r.GPSSamples().Latest(imei, q[0], q[1], mine)
			if err != nil {
				return a, err
			}
			if !ok {
				p.Lat = -1
			}
			a.pos = append(a.pos, p.Lat)
		}
		if a.session, err = r.DriverSessions().LastStarted(imei, at(20)); err != nil {
			return a, err
		}
		a.sessionLate, err = r.DriverSessions().LastStarted(quiet, at(20))
		return a, err
	}
	var want answers
	read(t, e, func(r *tx) (err error) { want, err = ask(r); return err })
	if !slices.Equal(want.pos, []float64{51, 50, -1}) || want.session == nil || want.session.DriverID != 7 || want.sessionLate != nil {
		t.Fatalf("an ordinary transaction answers %+v", want)
	}
	write(t, e, func(r *tx) error {
		if err := r.Prefetch(store.ReadAhead{IMEIs: []string{imei, quiet}, Now: at(30)}); err != nil {
			return err
		}
		p := pipeOf(r)
		trips := p.trips
		got, err := ask(r)
		if err != nil {
			return err
		}
		// The one question the latest sample cannot answer: a range
		// that ends before it.
		if p.trips-trips != 1 {
			t.Errorf("%d round trips for an event's questions read ahead, want 1", p.trips-trips)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("read ahead: %+v; want %+v", got, want)
		}
		return nil
	})
}

// TestColumnCount counts the columns of select lists, commas inside
// parentheses (subqueries, function calls) left out, and every list the
// joined read-ahead splits its rows by.
func TestColumnCount(t *testing.T) {
	t.Parallel()
	for list, want := range map[string]int{"a": 1, "a, b": 2, "a, (SELECT x, y FROM t), f(b, c), d": 4, organizationColumns: 17} {
		if got := columnCount(list); got != want {
			t.Errorf("columnCount(%q) = %d, want %d", list, got, want)
		}
	}
	e := trackEngine(t)
	for _, j := range []*joinedRows{&prefetchRows, &viewRows, &authRows} {
		rows, err := e.pool.Query(t.Context(), j.sql, []string{"000000000000000"})
		if err != nil {
			t.Fatal(err)
		}
		rows.Next()
		got := len(rows.FieldDescriptions())
		rows.Close()
		if want := j.columns(); got != want {
			t.Errorf("%s answers %d columns, its widths say %d", j.sql, got, j.columns())
		}
	}
}

// TestViewRoundTripOneTransaction: what one round trip sends on a
// connection of the views' pool runs as one read-only REPEATABLE READ
// transaction, ended with the round trip: its statements read from one
// snapshot without a BEGIN, and the next round trip is a transaction of
// its own.
func TestViewRoundTripOneTransaction(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	conn, err := e.views.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	trip := func() (first, second time.Time) {
		t.Helper()
		b := &pgx.Batch{}
		const q = `SELECT transaction_timestamp(), current_setting('transaction_isolation'), current_setting('transaction_read_only'),
			pg_sleep(0.01)::text`
		b.Queue(q)
		b.Queue(q)
		br := conn.SendBatch(t.Context(), b)
		defer br.Close()
		var at [2]time.Time
		for i := range at {
			var iso, ro, slept string
			if err := br.QueryRow().Scan(&at[i], &iso, &ro, &slept); err != nil {
				t.Fatal(err)
			}
			if iso != "repeatable read" || ro != "on" {
				t.Errorf("statement %d ran %s, read only %s; want repeatable read, read only", i, iso, ro)
			}
		}
		return at[0], at[1]
	}
	a1, a2 := trip()
	b1, _ := trip()
	if !a1.Equal(a2) {
		t.Errorf("the statements of one round trip ran in transactions begun at %v and %v, want one", a1, a2)
	}
	if !b1.After(a2) {
		t.Errorf("the next round trip's transaction began at %v, not after the first's %v", b1, a2)
	}
}

// TestViewReadsKeepGenericPlans: the reads of devices' views are planned
// once per connection of the views' pool, not at every execution.
// PostgreSQL keeps a prepared statement's generic plan from its sixth
// execution only when the plan is estimated to cost no more than the
// plans made for the values, which a read over an array of devices never
// is; on the connections of the views' own pool the generic plan is used
// from the first.
func TestViewReadsKeepGenericPlans(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	reads := []string{authRows.sql, viewRows.sql, viewQueued, prefetchAssignments, viewCredentials.sql, viewActiveOrgs, viewActiveDrivers}
	views, err := e.views.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer views.Release()
	for _, sql := range reads {
		for range 2 {
			rows, err := views.Query(t.Context(), sql, f.imeis)
			if err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		var generic, custom int64
		if err := views.QueryRow(t.Context(), `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`,
			sql).Scan(&generic, &custom); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if generic != 2 || custom != 0 {
			t.Errorf("on the views' pool, %d generic and %d custom plans for 2 executions, want 2 generic: %s", generic, custom, sql)
		}
	}
}

// TestPrefetchOrganizationsByID: a read-ahead that names the devices'
// organizations reads them, their settings and their webhook types by id,
// and the rules then read them without a round trip; a device named with
// an organization it is not in reads its own when asked.
func TestPrefetchOrganizationsByID(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	write(t, e, func(r *tx) error {
		// Device 2 is of organization B, which the read-ahead does not name.
		if err := r.Prefetch(store.ReadAhead{IMEIs: []string{f.imeis[0], f.imeis[2]}, Organizations: []int64{f.orgA},
			Now: trackNow}); err != nil {
			return err
		}
		p := pipeOf(r)
		trips := p.trips
		for _, imei := range []string{f.imeis[0], f.imeis[2]} {
			dev, err := r.Devices().Get(imei)
			if err != nil {
				return err
			}
			org, err := r.Organizations().Get(dev.OrganizationID)
			if err != nil {
				return err
			}
			if org.ID != dev.OrganizationID {
				t.Errorf("organization %d of device %s read as %d", dev.OrganizationID, imei, org.ID)
			}
			if _, err := r.OrganizationSettings().Get(dev.OrganizationID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if _, err := r.WebhookReceivers().Has(dev.OrganizationID, "events"); err != nil {
				return err
			}
			if want := map[string]int{f.imeis[0]: 0, f.imeis[2]: 3}[imei]; p.trips-trips != want {
				t.Errorf("device %s: %d round trips for its organization's rows, want %d", imei, p.trips-trips, want)
			}
			trips = p.trips
		}
		return nil
	})
}

// TestPrefetchGPSKeepsToTheIndex: a group commit's read of its devices'
// latest GPS samples finds them by the index even on a connection that
// chose its generic plan while the partitions were empty and vacuumed as
// such (as a VACUUM (ANALYZE) of the database leaves those made ahead),
// and keeps it: once today's partition has filled, it is not scanned
// again for every device.
func TestPrefetchGPSKeepsToTheIndex(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	ctx := t.Context()
	// One connection, which keeps the generic plan of its first execution
	// (as any keeps one from its sixth, when it looks no dearer).
	cfg := e.pool.Config()
	cfg.MaxConns, cfg.MinConns = 1, 0
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	today := "gps_samples_" + trackNow.Format("y2006m01d02")
	if _, err := one.Exec(ctx, `VACUUM (ANALYZE) gps_samples`); err != nil { // and its partitions
		t.Fatal(err)
	}
	prefetch := func() (seqScans int64, latest time.Time) {
		t.Helper()
		tx, err := e.beginOn(ctx, one, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			t.Fatal(err)
		}
		defer tx.pg.Rollback(context.WithoutCancel(ctx))
		// The backend's counts not yet reported, which may hold earlier
		// transactions' too: what the read-ahead adds to them.
		count := func() (n int64) {
			t.Helper()
			if err := tx.pg.QueryRow(ctx, `SELECT coalesce(sum(seq_scan), 0) FROM pg_stat_xact_user_tables WHERE relname = $1`,
				today).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := count()
		if err := tx.Prefetch(store.ReadAhead{IMEIs: f.imeis, Now: trackNow}); err != nil {
			t.Fatal(err)
		}
		seqScans = count() - before
		p, ok, err := tx.GPSSamples().Latest(f.imeis[0], trackNow.Add(-gpsAhead), trackNow, store.GPSFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			latest = p.Time
		}
		return seqScans, latest
	}
	prefetch() // planned while the partition is empty
	if _, err := one.Exec(ctx, `INSERT INTO gps_samples (imei, sampled_at, ownership, lat, lon, alt, speed, accuracy, heading)
		SELECT $1, $2::timestamptz - make_interval(secs => g), 1, 52, 4, 0, 0, 5, 0 FROM generate_series(1, 3000) g`,
		f.imeis[0], trackNow); err != nil {
		t.Fatal(err)
	}
	scans, latest := prefetch()
	if scans != 0 {
		t.Errorf("%s scanned %d times by the read-ahead of %d devices, want none (by the index)", today, scans, len(f.imeis))
	}
	if want := trackNow.Add(-time.Second); !latest.Equal(want) {
		t.Errorf("latest sample of %s at %s, want %s", f.imeis[0], latest, want)
	}
}

// TestCopyValues: a row's values copied into one buffer keep NULL (nil)
// apart from an empty value, no longer share the connection's buffer,
// and cannot grow into each other.
func TestCopyValues(t *testing.T) {
	raw := [][]byte{nil, {}, []byte("ab"), nil, []byte("c")}
	out := copyValues(raw)
	if len(out) != len(raw) || out[0] != nil || out[3] != nil || out[1] == nil || len(out[1]) != 0 ||
		string(out[2]) != "ab" || string(out[4]) != "c" {
		t.Fatalf("copied %q; want NULL, empty, ab, NULL, c", out)
	}
	raw[2][0] = 'x'
	out[1] = append(out[1], 'z')
	if string(out[2]) != "ab" || string(out[4]) != "c" {
		t.Fatalf("after writes to the source and to a copy: %q; want ab and c unchanged", out)
	}
}

// TestTextArray: the server reads textArray's text back as the items it
// was made of, whatever characters they hold, and none as an empty array.
func TestTextArray(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	for _, items := range [][]string{
		{},
		{"356938100090001"},
		{"", `a"b`, `c\d`, "e,f", "{g}", "NULL", " h ", "ü"},
	} {
		var got []string
		err := e.pool.QueryRow(context.Background(), `SELECT $1::text[]`, textArray(items)).Scan(&got)
		if err != nil || !slices.Equal(got, items) {
			t.Errorf("%q read back as %q, %v", items, got, err)
		}
	}
}
