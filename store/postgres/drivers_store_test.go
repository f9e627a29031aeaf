package postgres

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/bolt"
)

// driverHybrid is an engine that keeps the driver records in PostgreSQL
// and every other record in bbolt, so that the store's own driver rules and
// its retention purge run over this engine's driver records: each
// transaction is a bbolt transaction with a PostgreSQL one inside it.
type driverHybrid struct {
	*bolt.Engine
	pg *Engine
}

func (h driverHybrid) Update(ctx context.Context, fn func(store.Records) error) error {
	return h.Engine.Update(ctx, func(r store.Records) error {
		return h.pg.update(ctx, func(t *tx) error { return fn(driverHybridRecords{r, t}) })
	})
}

func (h driverHybrid) View(ctx context.Context, fn func(store.Records) error) error {
	return h.Engine.View(ctx, func(r store.Records) error {
		return h.pg.view(ctx, func(t *tx) error { return fn(driverHybridRecords{r, t}) })
	})
}

// driverHybridRecords are bbolt's records but the driver records.
type driverHybridRecords struct {
	store.Records
	pg *tx
}

func (r driverHybridRecords) Drivers() store.DriverSet               { return r.pg.Drivers() }
func (r driverHybridRecords) DriverSessions() store.DriverSessionSet { return r.pg.DriverSessions() }
func (r driverHybridRecords) DriverPinFailures() store.DriverPinFailureSet {
	return r.pg.DriverPinFailures()
}
func (r driverHybridRecords) DriverAssignments() store.DriverAssignmentSet {
	return r.pg.DriverAssignments()
}

// driverStore is a store over driverHybrid at a settable time, with a
// partner whose organizations are in both engines.
type driverStore struct {
	t       *testing.T
	db      *store.DB
	pg      *Engine
	now     time.Time
	partner *store.Partner
}

func newDriverStore(t *testing.T) *driverStore {
	t.Helper()
	e := openPrepared(t)
	b, err := bolt.OpenEngine(filepath.Join(t.TempDir(), "fleetcam.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	ds := &driverStore{t: t, pg: e, now: time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)}
	if ds.db, err = store.New(driverHybrid{b, e}, store.Options{Now: func() time.Time { return ds.now }}); err != nil {
		b.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.db.Close() })
	ds.update(func(tx *store.Tx) (err error) {
		ds.partner, err = tx.CreatePartner("Partner")
		return err
	})
	_, err = e.pool.Exec(context.Background(), `INSERT INTO partners (id, name, created_at) VALUES ($1, 'Partner', now())`, ds.partner.ID)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func (ds *driverStore) update(fn func(tx *store.Tx) error) {
	ds.t.Helper()
	if err := ds.db.Update(context.Background(), store.Actor{Source: "test"}, fn); err != nil {
		ds.t.Fatal(err)
	}
}

func (ds *driverStore) view(fn func(tx *store.Tx) error) {
	ds.t.Helper()
	if err := ds.db.View(context.Background(), fn); err != nil {
		ds.t.Fatal(err)
	}
}

// organization creates an organization that keeps its data for purgeDays
// (0: for ever) in the store, and in PostgreSQL under the same id.
func (ds *driverStore) organization(name string, purgeDays int) *store.Organization {
	ds.t.Helper()
	var o *store.Organization
	ds.update(func(tx *store.Tx) (err error) {
		if o, err = tx.CreateOrganization(ds.partner.ID, name, []byte("salt")); err != nil {
			return err
		}
		o.Retention.PurgeDays = purgeDays
		return tx.UpdateOrganization(o)
	})
	_, err := ds.pg.pool.Exec(context.Background(), `INSERT INTO organizations (id, name, partner_id, sso_salt, purge_days, created_at,
			is_organization_profile_enabled, exclusive_partner_only, purge_days_front_camera, purge_days_rear_camera, purge_days_auxiliary_cameras, device_retention_minutes, live_video_timeout_seconds, default_data_profile_id)
		VALUES ($1, $2, $3, 'salt', $4, now(), false, false, 0, 0, 0, 0, 0, 0)`, o.ID, name, ds.partner.ID, purgeDays)
	if err != nil {
		ds.t.Fatal(err)
	}
	return o
}

// device adds the n-th test IMEI to org and returns it with its ownership.
func (ds *driverStore) device(n int, org *store.Organization) *store.Device {
	ds.t.Helper()
	d := &store.Device{IMEI: luhnIMEI(n), Name: fmt.Sprint("Truck ", n), OrganizationID: org.ID, PartnerID: ds.partner.ID}
	ds.update(func(tx *store.Tx) error { return tx.AddDevice(d) })
	return d
}

// luhnIMEI is the n-th valid test IMEI (Luhn check digit appended).
func luhnIMEI(n int) string {
	body := fmt.Sprintf("35766010%06d", n)
	for d := 0; d <= 9; d++ {
		if s := body + strconv.Itoa(d); store.ValidIMEI(s) {
			return s
		}
	}
	panic("no check digit completes " + body)
}

// sessions inserts n ended sessions of dev's IMEI for ownership, of org,
// the first starting at from and each next one every after it.
func (ds *driverStore) sessions(imei string, org, ownership int64, n int, from time.Time, every time.Duration) {
	ds.t.Helper()
	_, err := ds.pg.pool.Exec(context.Background(), `INSERT INTO driver_sessions
		(imei, started_at, ended_at, organization_id, driver_id, method, ended_by, ownership)
		SELECT $1, $2::timestamptz + i * $3::interval, $2::timestamptz + i * $3::interval + interval '1 minute', $4, 1, 'pin', 'device', $5
		FROM generate_series(0, $6 - 1) AS i`, imei, from, every, org, ownership, n)
	if err != nil {
		ds.t.Fatal(err)
	}
}

// sessionCount counts the sessions of imei for ownership.
func (ds *driverStore) sessionCount(imei string, ownership int64) int {
	ds.t.Helper()
	var n int
	err := ds.pg.pool.QueryRow(context.Background(), `SELECT count(*) FROM driver_sessions WHERE imei = $1 AND ownership = $2`,
		imei, ownership).Scan(&n)
	if err != nil {
		ds.t.Fatal(err)
	}
	return n
}

// TestDriverSessionPurgeFollowsRetention runs the store's retention purge
// in small batches over sessions of devices that changed hands, of
// organizations with different purge days, more devices than one step of
// the walk reads and more sessions of one device than one query reads; it
// expects each session deleted exactly when its organization's cutoff has
// passed its start, and every open session kept.
func TestDriverSessionPurgeFollowsRetention(t *testing.T) {
	t.Parallel()
	ds := newDriverStore(t)
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	month, forever, tenDays := ds.organization("Month", 30), ds.organization("Forever", 0), ds.organization("Ten days", 10)

	// X was the month organization's, and is now the forever one's.
	x := ds.device(1, month)
	oldX := x.Ownership
	ds.update(func(tx *store.Tx) error { return tx.RemoveDevice(x.IMEI) })
	x = ds.device(1, forever)
	ds.sessions(x.IMEI, month.ID, oldX, 50, day0, time.Hour)                                                  // due
	ds.sessions(x.IMEI, forever.ID, x.Ownership, 600, day0.AddDate(0, 0, 1).Add(30*time.Second), time.Minute) // before the cutoff, kept for ever
	ds.sessions(x.IMEI, forever.ID, x.Ownership, 5, day0.AddDate(0, 0, 31), time.Hour)

	// Y's open session started long ago.
	y := ds.device(2, month)
	ds.sessions(y.IMEI, month.ID, y.Ownership, 5, day0, 24*time.Hour) // due
	if _, err := ds.pg.pool.Exec(context.Background(), `INSERT INTO driver_sessions (imei, started_at, organization_id, driver_id, method, ownership)
		VALUES ($1, $2, $3, 1, 'qr', $4)`, y.IMEI, day0.AddDate(0, 0, 5), month.ID, y.Ownership); err != nil {
		t.Fatal(err)
	}

	z := ds.device(3, tenDays)
	ds.sessions(z.IMEI, tenDays.ID, z.Ownership, 20, day0.AddDate(0, 0, 40), 24*time.Hour) // days 40 to 49 due

	var many []*store.Device
	for n := 100; n < 250; n++ {
		d := ds.device(n, month)
		ds.sessions(d.IMEI, month.ID, d.Ownership, 2, day0.AddDate(0, 0, 1), 39*24*time.Hour) // days 1 (due) and 40
		many = append(many, d)
	}
	// A device the store does not know: no organization's cutoff applies.
	unknown := luhnIMEI(999)
	ds.sessions(unknown, month.ID, 1, 3, day0, time.Hour)

	now := day0.AddDate(0, 0, 60)
	res, err := ds.db.Purge(context.Background(), now, store.PurgeSettings{Batch: 7})
	if err != nil {
		t.Fatal(err)
	}
	if want := 50 + 5 + 10 + 150; res.Deleted["driverSessions"] != want {
		t.Errorf("the purge deleted %d sessions; want %d (%v)", res.Deleted["driverSessions"], want, res.Deleted)
	}
	if res.Transactions < 215/7 {
		t.Errorf("%d transactions; want batches of at most 7", res.Transactions)
	}
	for _, tc := range []struct {
		name      string
		imei      string
		ownership int64
		want      int
	}{
		{"X's sessions of its earlier organization", x.IMEI, oldX, 0},
		{"X's sessions of the organization that keeps them", x.IMEI, x.Ownership, 605},
		{"Y's sessions: the open one", y.IMEI, y.Ownership, 1},
		{"Z's sessions from the cutoff on", z.IMEI, z.Ownership, 10},
		{"the first of the many devices", many[0].IMEI, many[0].Ownership, 1},
		{"the last of the many devices", many[149].IMEI, many[149].Ownership, 1},
		{"an unknown device's", unknown, 1, 3},
	} {
		if got := ds.sessionCount(tc.imei, tc.ownership); got != tc.want {
			t.Errorf("%s: %d left; want %d", tc.name, got, tc.want)
		}
	}
	ds.view(func(tx *store.Tx) error {
		if s, err := tx.CheckedInDriver(y.IMEI); err != nil || s == nil {
			t.Errorf("Y's open session after the purge: %+v, %v", s, err)
		}
		return nil
	})
	var imeis []string
	for _, d := range many {
		imeis = append(imeis, d.IMEI)
	}
	var left int
	if err := ds.pg.pool.QueryRow(context.Background(), `SELECT count(*) FROM driver_sessions
		WHERE imei = ANY($1) AND started_at >= $2`, imeis, day0.AddDate(0, 0, 40)).Scan(&left); err != nil || left != 150 {
		t.Errorf("the many devices keep %d sessions of day 40, %v; want 150", left, err)
	}
	res, err = ds.db.Purge(context.Background(), now, store.PurgeSettings{Batch: 7})
	if err != nil || res.Deleted["driverSessions"] != 0 {
		t.Errorf("a second purge deleted %d sessions, %v; want none", res.Deleted["driverSessions"], err)
	}
}

// TestStoreDriverRulesOverTheseRecords runs the store's driver rules over
// this engine's driver records: drivers created, found and listed, check-ins
// by PIN and QR code, wrong PINs, check-outs, assignments, the driver of a
// moment, and a driver deleted with its assignments.
func TestStoreDriverRulesOverTheseRecords(t *testing.T) {
	t.Parallel()
	ds := newDriverStore(t)
	org, other := ds.organization("Fleet", 0), ds.organization("Other", 0)
	dev := ds.device(1, org)
	var a, b, stranger *store.Driver
	ds.update(func(tx *store.Tx) error {
		a = &store.Driver{OrganizationID: org.ID, ThirdPartyID: "a", FirstName: "Anna", LastName: "Lee"}
		b = &store.Driver{OrganizationID: org.ID, ThirdPartyID: "b", FirstName: "bob", LastName: "Ray", Code: "24680"}
		stranger = &store.Driver{OrganizationID: other.ID, ThirdPartyID: "a", Code: "24680"}
		for _, d := range []*store.Driver{a, b, stranger} {
			if err := tx.CreateDriver(d); err != nil {
				return err
			}
		}
		return nil
	})
	err := ds.db.Update(context.Background(), store.Actor{}, func(tx *store.Tx) error {
		return tx.CreateDriver(&store.Driver{OrganizationID: org.ID, ThirdPartyID: "c", Code: "24680"})
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("a second driver with a PIN used in the organization: %v; want ErrConflict", err)
	}
	ds.view(func(tx *store.Tx) error {
		if d, err := tx.DriverByCode(other.ID, "24680"); err != nil || d.ID != stranger.ID {
			t.Errorf("DriverByCode = %+v, %v; want the other organization's driver", d, err)
		}
		if d, err := tx.DriverByQR(b.QRPayload); err != nil || d.ID != b.ID {
			t.Errorf("DriverByQR = %+v, %v", d, err)
		}
		got, total, err := tx.Drivers(store.DriverFilter{OrganizationIDs: map[int64]bool{org.ID: true},
			FirstName: regexp.MustCompile("(?i)^[ab]")}, store.Sort{Key: store.DriverByFirstName, Desc: true}, store.Page{Limit: 1})
		if err != nil || total != 2 || len(got) != 1 || got[0].ID != b.ID {
			t.Errorf("Drivers = %+v of %d, %v; want bob of 2", got, total, err)
		}
		return nil
	})

	t0 := ds.now
	apply := func(ev store.EventInput) string {
		t.Helper()
		var types []string
		ds.update(func(tx *store.Tx) error {
			out, err := tx.ApplyDriverEvent(dev, ev)
			for _, tr := range out {
				types = append(types, tr.Type)
			}
			return err
		})
		return strings.Join(types, ",")
	}
	for _, step := range []struct {
		ev   store.EventInput
		want string
	}{
		{store.EventInput{DeviceEventID: "e1", Type: "driverCheckIn", Time: t0, PinCode: a.Code}, "driverCheckIn"},
		{store.EventInput{DeviceEventID: "e1", Type: "driverCheckIn", Time: t0, PinCode: a.Code}, ""},
		{store.EventInput{DeviceEventID: "e2", Type: "driverCheckIn", Time: t0.Add(10 * time.Minute), QRCode: b.QRPayload}, "driverCheckOut,driverCheckIn"},
		{store.EventInput{DeviceEventID: "e3", Type: "driverCheckIn", Time: t0.Add(11 * time.Minute), PinCode: "99999"}, ""},
		{store.EventInput{DeviceEventID: "e4", Type: "driverCheckIn", Time: t0.Add(12 * time.Minute), PinCode: "99999"}, ""},
		{store.EventInput{DeviceEventID: "e5", Type: "driverCheckIn", Time: t0.Add(13 * time.Minute), PinCode: "99999"}, "wrongPinCode"},
		{store.EventInput{DeviceEventID: "e6", Type: "driverCheckOut", Time: t0.Add(30 * time.Minute)}, "driverCheckOut"},
		{store.EventInput{DeviceEventID: "e7", Type: "driverCheckOut", Time: t0.Add(31 * time.Minute)}, ""},
	} {
		if got := apply(step.ev); got != step.want {
			t.Fatalf("%s %s: transitions %q; want %q", step.ev.DeviceEventID, step.ev.Type, got, step.want)
		}
	}
	ds.view(func(tx *store.Tx) error {
		for _, c := range []struct {
			at   time.Duration
			want int64
		}{{-time.Minute, 0}, {0, a.ID}, {10 * time.Minute, b.ID}, {29 * time.Minute, b.ID}, {30 * time.Minute, 0}} {
			var id int64
			d, err := tx.CurrentDriver(dev, t0.Add(c.at))
			if d != nil {
				id = d.ID
			}
			if err != nil || id != c.want {
				t.Errorf("CurrentDriver at %v: %d, %v; want %d", c.at, id, err, c.want)
			}
		}
		segs, err := tx.DriverSegments(dev, t0.Add(5*time.Minute), t0.Add(20*time.Minute))
		if err != nil || len(segs) != 2 || segs[0].DriverID != a.ID || segs[1].DriverID != b.ID {
			t.Errorf("DriverSegments = %+v, %v", segs, err)
		}
		return nil
	})

	// An assignment attributes the device's time to its driver; the driver,
	// deactivated and deleted, takes its assignments along.
	ds.now = t0.Add(time.Hour)
	ds.update(func(tx *store.Tx) error {
		return tx.AssignDriver(&store.DriverAssignment{OrganizationID: org.ID, DriverID: a.ID, IMEI: dev.IMEI})
	})
	ds.now = t0.Add(2 * time.Hour)
	ds.view(func(tx *store.Tx) error {
		if d, err := tx.CurrentDriver(dev, ds.now); err != nil || d == nil || d.ID != a.ID {
			t.Errorf("CurrentDriver while assigned = %+v, %v; want driver a", d, err)
		}
		if imei, err := tx.DriverAssignedDevice(a.ID); err != nil || imei != dev.IMEI {
			t.Errorf("DriverAssignedDevice = %q, %v", imei, err)
		}
		return nil
	})
	ds.update(func(tx *store.Tx) error {
		inactive := false
		if _, err := tx.UpdateDriver(a.ID, store.DriverPatch{IsActive: &inactive}); err != nil {
			return err
		}
		return tx.DeleteDriver(a.ID)
	})
	ds.view(func(tx *store.Tx) error {
		if as, err := tx.DeviceAssignments(dev.IMEI); err != nil || len(as) != 0 {
			t.Errorf("assignments after deleting their driver: %+v, %v", as, err)
		}
		if d, err := tx.CurrentDriver(dev, t0); err != nil || d == nil || d.ID != a.ID {
			t.Errorf("the deleted driver's past check-in: %+v, %v; want its id", d, err)
		}
		return nil
	})
}
