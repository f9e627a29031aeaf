package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	boltstore "github.com/fleetcam/fleetcam/store/bolt"
	"github.com/fleetcam/fleetcam/store/pgtest"
	"github.com/fleetcam/fleetcam/store/postgres"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// copyT0 is when the seeded stores' clock starts.
var copyT0 = time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)

// openCopyBolt opens a new bbolt store at path with clock's time.
func openCopyBolt(t *testing.T, path string, clock *storetest.Clock) *DB {
	t.Helper()
	db, err := boltstore.Open(path, Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openCopyPostgres opens a store in a new, empty database of the test
// server, which Open migrates, as fleetcam store copy does.
func openCopyPostgres(t *testing.T, clock *storetest.Clock) *DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), pgtest.Database(t, ""), postgres.Options{MaxConns: 4}, Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// copyStore copies src's records into dst and fails the test on error; it
// returns the counts and the kinds progress heard of, in order.
func copyStore(t *testing.T, src, dst *DB) ([]CopyCount, []Kind) {
	t.Helper()
	var started []Kind
	counts, err := Copy(t.Context(), src.Engine().(Dumper), dst.Engine().(Loader), func(p CopyProgress) {
		if p.Done == 0 && !p.Finished {
			started = append(started, p.Kind)
		}
	})
	if err != nil {
		t.Fatalf("copy: %v (counts %v)", err, counts)
	}
	return counts, started
}

// A store with a record of every kind, copied bbolt → PostgreSQL → a new
// bbolt file, holds every record with its identity on all three, answers
// every read of the store the same, and gives the records created after
// the copy ids above the copied ones.
func TestCopyBetweenEngines(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(copyT0)
	src := openCopyBolt(t, filepath.Join(t.TempDir(), "fleetcam.db"), clock)
	seed := seedCopy(t, src, clock)
	for k, n := range countsOf(t, src) {
		if n == 0 {
			t.Errorf("the seeded store holds no %s: seedCopy must write every kind", k)
		}
	}

	pg := openCopyPostgres(t, clock)
	counts, started := copyStore(t, src, pg)
	if !slices.Equal(started, Kinds) {
		t.Errorf("progress heard of %v, want every kind in order %v", started, Kinds)
	}
	for _, c := range counts {
		if c.Source == 0 || c.Source != c.Destination {
			t.Errorf("%s: %d copied of %d", c.Kind, c.Destination, c.Source)
		}
	}

	path := filepath.Join(t.TempDir(), "copied.db")
	err := boltstore.CreateFile(t.Context(), path, Options{Now: clock.Now}, func(db *DB) error {
		_, err := Copy(t.Context(), pg.Engine().(Dumper), db.Engine().(Loader), nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	back := openCopyBolt(t, path, clock)

	want, wantAPI := dumpRecords(t, src), readStore(t, src, seed)
	for name, db := range map[string]*DB{"postgres": pg, "bbolt again": back} {
		got, gotAPI := dumpRecords(t, db), readStore(t, db, seed)
		for _, k := range Kinds {
			if !slices.Equal(got[k], want[k]) {
				t.Errorf("%s: the %s differ:\n got %s\nwant %s", name, k, strings.Join(got[k], "\n     "),
					strings.Join(want[k], "\n     "))
			}
		}
		for what, v := range wantAPI {
			if gotAPI[what] != v {
				t.Errorf("%s: %s reads\n %s\nwant\n %s", name, what, gotAPI[what], v)
			}
		}
	}

	copied := highestIDs(t, src)
	for name, db := range map[string]*DB{"postgres": pg, "bbolt again": back} {
		t.Run("new records on "+name, func(t *testing.T) {
			fresh := addAfterCopy(t, db, clock, seed)
			for seq, id := range fresh {
				if id <= copied[seq] {
					t.Errorf("a new %s got id %d, not above the copied %d", seq, id, copied[seq])
				}
			}
		})
	}
}

// A store with a record of every kind, written on PostgreSQL and copied
// into another database (the kinds that grow with the fleet by COPY, their
// foreign keys checked once at the end), holds every record with its
// identity, answers every read the same, and gives the records created
// after the copy ids above the copied ones.
func TestCopyPostgresToPostgres(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(copyT0)
	src := openCopyPostgres(t, clock)
	seed := seedCopy(t, src, clock)
	dst := openCopyPostgres(t, clock)
	counts, _ := copyStore(t, src, dst)
	for _, c := range counts {
		if c.Source == 0 || c.Source != c.Destination {
			t.Errorf("%s: %d copied of %d", c.Kind, c.Destination, c.Source)
		}
	}
	want, got := dumpRecords(t, src), dumpRecords(t, dst)
	for _, k := range Kinds {
		if !slices.Equal(got[k], want[k]) {
			t.Errorf("the %s differ:\n got %s\nwant %s", k, strings.Join(got[k], "\n     "), strings.Join(want[k], "\n     "))
		}
	}
	wantAPI, gotAPI := readStore(t, src, seed), readStore(t, dst, seed)
	for what, v := range wantAPI {
		if gotAPI[what] != v {
			t.Errorf("%s reads\n %s\nwant\n %s", what, gotAPI[what], v)
		}
	}
	copied := highestIDs(t, src)
	for seq, id := range addAfterCopy(t, dst, clock, seed) {
		if id <= copied[seq] {
			t.Errorf("a new %s got id %d, not above the copied %d", seq, id, copied[seq])
		}
	}
}

// highestIDs is the last value of each of db's sequences.
func highestIDs(t *testing.T, db *DB) map[Sequence]int64 {
	t.Helper()
	var seqs map[Sequence]int64
	err := db.Engine().(Dumper).Dump(t.Context(), func(d Dump) error {
		var err error
		seqs, err = d.Sequences()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Sequences {
		if seqs[s] == 0 {
			t.Errorf("the seeded store's sequence %s gave nothing: seedCopy must draw from every sequence", s)
		}
	}
	return seqs
}

// addAfterCopy creates one record of each kind with an id in db, as the
// store's rules do after a copy, and returns the id each got.
func addAfterCopy(t *testing.T, db *DB, clock *storetest.Clock, s copySeed) map[Sequence]int64 {
	t.Helper()
	ids := map[Sequence]int64{}
	clock.Advance(time.Minute)
	err := db.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error {
		p, err := tx.CreatePartner("After the copy")
		if err != nil {
			return err
		}
		o, err := tx.CreateOrganization(p.ID, "New fleet", nil)
		if err != nil {
			return err
		}
		u := &User{Email: "new@fleet.example", PartnerID: p.ID}
		if err := tx.CreateUser(u); err != nil {
			return err
		}
		g, err := tx.CreateGroup(o.ID, "New group")
		if err != nil {
			return err
		}
		d := &Device{IMEI: fxIMEI(9), Name: "New van", OrganizationID: o.ID, PartnerID: p.ID}
		if err := tx.AddDevice(d); err != nil {
			return err
		}
		res, err := tx.IngestEvent(d, EventInput{Type: "accOn", Time: clock.Now(), Lat: 1, Lon: 1, DeviceEventID: "n-1"})
		if err != nil {
			return err
		}
		if err := tx.ApplyTripEvent(d, EventInput{Type: "accOn", Time: clock.Now(), Lat: 1, Lon: 1}); err != nil {
			return err
		}
		e, err := tx.ReviewEvent(res.Event.ID, EventReview{Comment: "new", AudienceName: "partner"})
		if err != nil {
			return err
		}
		trips, _, err := tx.Trips(TripFilter{IMEI: d.IMEI}, Page{})
		if err != nil || len(trips) != 1 {
			return fmt.Errorf("the new trip: %v %v", trips, err)
		}
		drv := &Driver{OrganizationID: o.ID, ThirdPartyID: "new", IsActive: true}
		if err := tx.CreateDriver(drv); err != nil {
			return err
		}
		a := &DriverAssignment{OrganizationID: o.ID, DriverID: drv.ID, IMEI: d.IMEI}
		if err := tx.AssignDriver(a); err != nil {
			return err
		}
		alarm, err := tx.SimulateAlarm(d, AlarmPowerDisconnected, clock.Now(), "simulated")
		if err != nil {
			return err
		}
		r := &AlarmRecipient{Kind: RecipientHealth, Email: "new@fleet.example", PartnerID: p.ID}
		if err := tx.AddAlarmRecipient(r); err != nil {
			return err
		}
		if err := tx.QueueCommand(&QueuedCommand{ID: "new", IMEI: d.IMEI, Name: "reboot"}); err != nil {
			return err
		}
		sub, err := tx.SaveWebhookSubscription(WebhookSubscription{OrganizationID: o.ID, IMEI: d.IMEI,
			URL: "https://new.example/hook", Type: "event"})
		if err != nil {
			return err
		}
		msgs, err := tx.MessagesAfter(0, 0)
		if err != nil || len(msgs) == 0 {
			return fmt.Errorf("messages: %v %v", msgs, err)
		}
		del := &Delivery{OrganizationID: o.ID, URL: "https://new.example/hook", MessageSeq: msgs[len(msgs)-1].Seq,
			WebhookID: "new", Type: "event", Status: DeliveryPending, NextAttemptAt: clock.Now(),
			Body: json.RawMessage(`{}`)}
		if err := tx.EnqueueDelivery(del); err != nil {
			return err
		}
		ids[SeqPartners], ids[SeqOrganizations], ids[SeqUsers], ids[SeqGroups] = p.ID, o.ID, u.ID, g.ID
		ids[SeqOwnerships], ids[SeqEvents], ids[SeqEventComments] = d.Ownership, e.ID, e.Comments[0].ID
		ids[SeqTrips], ids[SeqDrivers], ids[SeqDriverAssignments] = trips[0].ID, drv.ID, a.ID
		ids[SeqAlarms], ids[SeqAlarmNotes], ids[SeqAlarmRecipients] = alarm.ID, alarm.Comments[0].ID, r.ID
		ids[SeqWebhookSubscriptions], ids[SeqDeliveries] = sub.ID, del.ID
		ids[SeqMessages] = msgs[len(msgs)-1].Seq
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	audit, _, err := db.AuditLog(t.Context(), AuditFilter{}, Page{Limit: 1})
	if err != nil || len(audit) != 1 {
		t.Fatalf("audit log: %v %v", audit, err)
	}
	ids[SeqAuditEntries] = audit[0].ID
	// Queued commands show no sequence; the new one comes after the
	// copied one in its device's queue, which the reads above compare.
	delete(ids, SeqQueuedCommands)
	return ids
}

// A destination that holds records is refused and left as it was; so is
// a source of an older version.
func TestCopyRefusals(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(copyT0)
	src := openCopyBolt(t, filepath.Join(t.TempDir(), "src.db"), clock)
	if err := src.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error {
		_, err := tx.CreatePartner("Source")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, dst := range []struct {
		name string
		open func() *DB
	}{
		{"bbolt", func() *DB { return openCopyBolt(t, filepath.Join(t.TempDir(), "dst.db"), clock) }},
		{"postgres", func() *DB { return openCopyPostgres(t, clock) }},
	} {
		t.Run("not empty "+dst.name, func(t *testing.T) {
			db := dst.open()
			if err := db.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error {
				_, err := tx.CreatePartner("Already here")
				return err
			}); err != nil {
				t.Fatal(err)
			}
			_, err := Copy(t.Context(), src.Engine().(Dumper), db.Engine().(Loader), nil)
			if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "partners") {
				t.Fatalf("copy into a store with a partner: %v, want ErrNotEmpty naming the partners", err)
			}
			if got := countsOf(t, db)[KindPartners]; got != 1 {
				t.Errorf("the destination holds %d partners after the refusal, want its 1", got)
			}
		})
	}
	t.Run("outdated source", func(t *testing.T) {
		if err := src.Engine().Update(t.Context(), func(rec Records) error { return rec.SetSchemaVersion(Version() - 1) }); err != nil {
			t.Fatal(err)
		}
		_, err := Copy(t.Context(), src.Engine().(Dumper), openCopyPostgres(t, clock).Engine().(Loader), nil)
		if !errors.Is(err, ErrOutdated) || !strings.Contains(err.Error(), "fleetcam migrate") {
			t.Fatalf("copy of a store of an older version: %v, want ErrOutdated telling to run fleetcam migrate", err)
		}
	})
	t.Run("postgres source without the schema", func(t *testing.T) {
		e, err := postgres.OpenEngine(t.Context(), pgtest.Database(t, ""), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		dst := openCopyBolt(t, filepath.Join(t.TempDir(), "dst.db"), clock)
		_, err = Copy(t.Context(), e, dst.Engine().(Loader), nil)
		if !errors.Is(err, ErrOutdated) || !strings.Contains(err.Error(), "fleetcam migrate") {
			t.Fatalf("copy of a database without the schema: %v, want ErrOutdated telling to run fleetcam migrate", err)
		}
	})
}

// A copy that stops half-way, here because its caller gave up while it
// copied the events, leaves the destination without a record: the
// PostgreSQL transaction rolls back, and the bbolt file is never made.
func TestCopyFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(copyT0)
	src := openCopyBolt(t, filepath.Join(t.TempDir(), "fleetcam.db"), clock)
	seedCopy(t, src, clock)
	cancelAtEvents := func() (context.Context, func(CopyProgress)) {
		ctx, cancel := context.WithCancel(t.Context())
		t.Cleanup(cancel)
		return ctx, func(p CopyProgress) {
			if p.Kind == KindEvents {
				cancel()
			}
		}
	}

	t.Run("postgres", func(t *testing.T) {
		dst := openCopyPostgres(t, clock)
		ctx, progress := cancelAtEvents()
		_, err := Copy(ctx, src.Engine().(Dumper), dst.Engine().(Loader), progress)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("copy: %v, want context.Canceled", err)
		}
		for k, n := range countsOf(t, dst) {
			if n != 0 {
				t.Errorf("the destination holds %d %s after the failed copy", n, k)
			}
		}
	})
	t.Run("bbolt", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "copied.db")
		ctx, progress := cancelAtEvents()
		err := boltstore.CreateFile(ctx, path, Options{}, func(db *DB) error {
			_, err := Copy(ctx, src.Engine().(Dumper), db.Engine().(Loader), progress)
			return err
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("copy: %v, want context.Canceled", err)
		}
		if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
			t.Errorf("the directory holds %v (%v) after the failed copy, want nothing", entries, err)
		}
	})
}
