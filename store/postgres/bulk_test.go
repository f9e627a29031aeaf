package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// seedLike is a transaction as fleetbench seeds: events of devices in
// turn, with device ids and accelerometer samples, then each device's GPS
// in two calls that overlap.
func seedLike(imeis []string, events int, start time.Time) func(tx *store.Tx) error {
	return func(tx *store.Tx) error {
		for i := range events {
			dev, err := tx.Device(imeis[i%len(imeis)])
			if err != nil {
				return err
			}
			r, err := tx.IngestEvent(dev, store.EventInput{DeviceEventID: fmt.Sprintf("S%d", i), Type: "deceleration",
				Time: start.Add(time.Duration(i) * 17 * time.Minute), Lat: 52.37, Lon: 4.89, Speed: 10, Accuracy: 4,
				Samples: []store.MetadataSample{{X: -0.4, Y: -5.8, Z: 9.8, Time: start.Unix() + int64(i), Speed: 12}}})
			if err != nil {
				return err
			}
			if !r.Created {
				return fmt.Errorf("event %d not created: %s", i, r.Dropped)
			}
		}
		for d, imei := range imeis {
			dev, err := tx.Device(imei)
			if err != nil {
				return err
			}
			var pts []store.GPSPoint
			for k := range 200 {
				pts = append(pts, store.GPSPoint{Time: start.Add(time.Duration(k)*15*time.Minute + time.Duration(d)*time.Second),
					Lat: 52.3, Lon: 4.8 + float64(k)/1e4, Speed: float64(k % 120), Accuracy: 5})
			}
			for _, batch := range [][]store.GPSPoint{pts[:120], pts[100:]} {
				if _, err := tx.AddGPS(dev, batch); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// A bulk transaction of many batches writes the records an ordinary one
// writes, with the same ids and sequences, and makes the partitions of
// the past days it writes, which the ordinary one leaves to the default
// partition.
func TestBulkWritesBatchesAndDayPartitions(t *testing.T) {
	// Not parallel: it sets the package's batch size for its run.
	defer func(n int) { bulkBatch = n }(bulkBatch)
	bulkBatch = 25
	ctx := context.Background()
	// Weeks back: days the engine keeps no partition ready for.
	start := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -40)
	now := func() time.Time { return start.AddDate(0, 0, 10) }
	var dumps [2]map[store.Kind][]string
	var seqs [2]map[store.Sequence]int64
	var days [2][]string
	var counts [2]map[hourKey]int64
	for i, bulk := range []bool{false, true} {
		e := openPrepared(t)
		e.node = fmt.Sprintf("node-%d", i)
		db, err := store.New(e, store.Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		var imeis []string
		err = db.Update(ctx, store.Actor{Source: "test"}, func(tx *store.Tx) error {
			p, err := tx.CreatePartner("Bench")
			if err != nil {
				return err
			}
			o, err := tx.CreateOrganization(p.ID, "Bench fleet", nil)
			if err != nil {
				return err
			}
			for n := range 3 {
				imei := fmt.Sprintf("35693800000%03d%d", n, luhn(fmt.Sprintf("35693800000%03d", n)))
				if err := tx.AddDevice(&store.Device{IMEI: imei, Name: imei, OrganizationID: o.ID, PartnerID: p.ID,
					Status: store.DeviceActivated}); err != nil {
					return err
				}
				imeis = append(imeis, imei)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		update := db.Update
		if bulk {
			update = db.BulkUpdate
		}
		if err := update(ctx, store.Actor{Source: "device"}, seedLike(imeis, 140, start)); err != nil {
			t.Fatal(err)
		}
		dumps[i], seqs[i] = dumpAll(t, e)
		counts[i] = checkCountsOfEvents(t, e, map[bool]string{false: "the ordinary transaction", true: "the bulk transaction"}[bulk])
		read(t, e, func(t *tx) error {
			rows, err := t.pg.Query(t.ctx, `SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
				WHERE i.inhparent::regclass::text IN ('events', 'event_files', 'gps_samples') ORDER BY 1`)
			if err != nil {
				return err
			}
			names, err := pgx.CollectRows(rows, pgx.RowTo[string])
			for _, name := range names {
				_, suffix, _ := strings.Cut(name, "_y")
				if day, err := time.Parse("2006m01d02", suffix); err == nil && day.Before(start.AddDate(0, 0, 20)) {
					days[i] = append(days[i], name)
				}
			}
			return err
		})
		db.Close()
	}
	for _, k := range store.Kinds {
		if !slices.Equal(dumps[1][k], dumps[0][k]) {
			t.Errorf("the %s differ:\n bulk %s\nplain %s", k, strings.Join(dumps[1][k], "\n      "),
				strings.Join(dumps[0][k], "\n      "))
		}
	}
	if len(dumps[1][store.KindEvents]) != 140 || len(dumps[1][store.KindGPSSamples]) != 600 {
		t.Errorf("%d events and %d GPS samples stored", len(dumps[1][store.KindEvents]), len(dumps[1][store.KindGPSSamples]))
	}
	if len(counts[1]) < 2 || !maps.Equal(counts[1], counts[0]) {
		t.Errorf("the bulk transaction counts %v, the ordinary one %v", counts[1], counts[0])
	}
	if !maps.Equal(seqs[1], seqs[0]) {
		t.Errorf("the sequences stand at %v after the bulk transaction, at %v after the ordinary one", seqs[1], seqs[0])
	}
	// 140 events 17 minutes apart: two days; GPS for 50 hours: three.
	var want []string
	for table, n := range map[string]int{"event_files": 2, "events": 2, "gps_samples": 3} {
		for d := range n {
			want = append(want, table+"_y"+start.AddDate(0, 0, d).Format("2006m01d02"))
		}
	}
	slices.Sort(want)
	if !slices.Equal(days[1], want) {
		t.Errorf("after the bulk transaction the partitions of past days are %v, want %v", days[1], want)
	}
	if len(days[0]) != 0 {
		t.Errorf("after the ordinary transaction the partitions of past days are %v, want none", days[0])
	}
}

// checkCountsOfEvents fails t unless e's hourly event counts (summed over
// the nodes) are what a count(*) of the stored events by organization,
// hour, partner and type gives, its daily counts what one by device,
// ownership, day and type gives, and every count row is e's node's; it
// returns the hourly counts.
func checkCountsOfEvents(t *testing.T, e *Engine, after string) map[hourKey]int64 {
	t.Helper()
	rows := readCounts(t, e, `SELECT organization_id, date_trunc('hour', time, 'UTC'), coalesce(partner_id, 0), type, count(*)
		FROM events GROUP BY 1, 2, 3, 4`)
	kept := readCounts(t, e, `SELECT organization_id, hour, partner_id, type, sum(events)::bigint
		FROM event_hours GROUP BY 1, 2, 3, 4`)
	if !maps.Equal(kept, rows) {
		t.Errorf("after %s the hourly counts are %v, the events count %v", after, kept, rows)
	}
	if kept, rows := keptDayCounts(t, e), storedDayCounts(t, e); !maps.Equal(kept, rows) {
		t.Errorf("after %s the daily counts are %v, the events count %v", after, kept, rows)
	}
	var others int
	read(t, e, func(t *tx) error {
		return t.pg.QueryRow(t.ctx, `SELECT (SELECT count(*) FROM event_hours WHERE node <> $1)
			+ (SELECT count(*) FROM device_event_days WHERE node <> $1)`, e.node).Scan(&others)
	})
	if others != 0 {
		t.Errorf("after %s %d count rows are not node %q's", after, others, e.node)
	}
	return kept
}

// dumpAll reads out every record of e, by kind, as sorted JSON, and the
// sequences.
func dumpAll(t *testing.T, e *Engine) (map[store.Kind][]string, map[store.Sequence]int64) {
	t.Helper()
	out := map[store.Kind][]string{}
	var seqs map[store.Sequence]int64
	err := e.Dump(context.Background(), func(d store.Dump) error {
		for _, k := range store.Kinds {
			for r, err := range d.Records(k) {
				if err != nil {
					return err
				}
				raw, err := json.Marshal(r)
				if err != nil {
					return err
				}
				out[k] = append(out[k], string(raw))
			}
			slices.Sort(out[k])
		}
		var err error
		seqs, err = d.Sequences()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, seqs
}

// luhn is the check digit of an IMEI's first 14 digits.
func luhn(body string) int {
	sum := 0
	for i, c := range body {
		d := int(c - '0')
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return (10 - sum%10) % 10
}

// What a bulk transaction held after a savepoint goes when the savepoint
// is rolled back, the ids it gave staying given, as an ordinary
// transaction's would; what it held before stays.
func TestBulkSavepointRollback(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	at := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	s := seeder{t: t, e: e, at: at}
	org := s.organization(store.Organization{Name: "Fleet", PartnerID: s.partner("Partner").ID})
	event := func(n int) *store.Event {
		return &store.Event{IMEI: "356938035643809", OrganizationID: org.ID, PartnerID: org.PartnerID, Type: "button",
			Time: at.Add(time.Duration(n) * time.Minute), Severity: 2, Status: store.EventStatusNew, CreatedAt: at}
	}
	err := e.BulkUpdate(context.Background(), func(r store.Records) error {
		t := r.(*tx)
		if err := r.Events().Insert(event(1)); err != nil {
			return err
		}
		sp, err := t.pg.Begin(t.ctx)
		if err != nil {
			return err
		}
		if err := r.Events().Insert(event(2)); err != nil {
			return err
		}
		if err := r.Messages().Append(&store.Message{Kind: store.MessageGPS, OrganizationID: org.ID, Time: at}); err != nil {
			return err
		}
		if err := sp.Rollback(t.ctx); err != nil {
			return err
		}
		return r.Events().Insert(event(3))
	})
	if err != nil {
		t.Fatal(err)
	}
	write(t, e, func(t *tx) error { return t.Events().Insert(event(4)) })
	// The last event given rolled back: its id stays given all the same.
	err = e.BulkUpdate(context.Background(), func(r store.Records) error {
		t := r.(*tx)
		if err := r.Events().Insert(event(5)); err != nil {
			return err
		}
		sp, err := t.pg.Begin(t.ctx)
		if err != nil {
			return err
		}
		if err := r.Events().Insert(event(6)); err != nil {
			return err
		}
		return sp.Rollback(t.ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	write(t, e, func(t *tx) error { return t.Events().Insert(event(7)) })
	read(t, e, func(t *tx) error {
		rows, err := t.pg.Query(t.ctx, `SELECT id FROM events ORDER BY id`)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if want := []int64{1, 3, 4, 5, 7}; err == nil && !slices.Equal(ids, want) {
			err = fmt.Errorf("events %v stored, want %v", ids, want)
		}
		var msgs int
		if err == nil {
			err = t.pg.QueryRow(t.ctx, `SELECT count(*) FROM messages`).Scan(&msgs)
		}
		if err == nil && msgs != 0 {
			err = fmt.Errorf("%d messages stored, want none", msgs)
		}
		return err
	})
	// The events rolled back are not counted; those kept are, once each.
	if counts := checkCountsOfEvents(t, e, "the savepoints"); counts[hourKey{org.ID, at, org.PartnerID, "button"}] != 5 {
		t.Errorf("the hour counts %v, want 5 button events at %s", counts, at)
	}
}

// A bulk transaction keeps the memo of a device's latest GPS sample as an
// ordinary one does: points after the latest sample read ahead are held
// without a read, the latest sample but a batch's own is the one before
// it without a round trip, a batch with a point at or before the latest
// reads the stored ones of its range (and the held ones count), and a
// savepoint rolled back forgets what the memo learnt.
func TestBulkGPSReadAhead(t *testing.T) {
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
	err := e.BulkUpdate(context.Background(), func(rec store.Records) error {
		r := rec.(*tx)
		if err := r.Prefetch(store.ReadAhead{IMEIs: []string{imei}, Now: at(60)}); err != nil {
			return err
		}
		trips := pipeOf(r).trips
		first := []store.GPSPoint{pt(1, 51), pt(1, 99), pt(2, 52)}
		stored, err := r.GPSSamples().Insert(imei, 1, first)
		if err != nil {
			return err
		}
		if want := []bool{true, false, true}; !slices.Equal(stored, want) {
			t.Errorf("stored %v, want %v", stored, want)
		}
		if got := latestBut(r, []store.GPSPoint{first[0], first[2]}); !got.Equal(at(0)) {
			t.Errorf("latest but the first batch: %v, want %v", got, at(0))
		}
		if n := pipeOf(r).trips - trips; n != 0 {
			t.Errorf("a batch after the latest sample and the latest but it took %d round trips, want none", n)
		}
		// A resent point, held, and one stored before the transaction.
		second := []store.GPSPoint{pt(2, 77), pt(0, 78), pt(4, 54)}
		if stored, err = r.GPSSamples().Insert(imei, 1, second); err != nil {
			return err
		}
		if want := []bool{false, false, true}; !slices.Equal(stored, want) {
			t.Errorf("stored %v of a batch with resent points, want %v", stored, want)
		}
		if got := latestBut(r, second[2:]); !got.Equal(at(2)) {
			t.Errorf("latest but the second batch: %v, want %v", got, at(2))
		}
		// What a savepoint rolled back took with it is not known after it.
		sp, err := r.pg.Begin(r.ctx)
		if err != nil {
			return err
		}
		if _, err := r.GPSSamples().Insert(imei, 1, []store.GPSPoint{pt(8, 88)}); err != nil {
			return err
		}
		if err := sp.Rollback(r.ctx); err != nil {
			return err
		}
		third := []store.GPSPoint{pt(9, 59)}
		if stored, err = r.GPSSamples().Insert(imei, 1, third); err != nil {
			return err
		}
		if !slices.Equal(stored, []bool{true}) {
			t.Errorf("stored %v after the savepoint, want [true]", stored)
		}
		if got := latestBut(r, third); !got.Equal(at(4)) {
			t.Errorf("latest but the batch after the savepoint: %v, want %v", got, at(4))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	read(t, e, func(r *tx) error {
		got, err := r.GPSSamples().Range(imei, at(0), at(10), store.GPSFilter{}, 0)
		if err != nil {
			return err
		}
		var lats []float64
		for _, p := range got {
			lats = append(lats, p.Lat)
		}
		if want := []float64{50, 51, 52, 54, 59}; !slices.Equal(lats, want) {
			t.Errorf("stored samples %v, want %v", lats, want)
		}
		return nil
	})
}

// tripCounter is an engine whose bulk transactions say how many round
// trips their function took (the pipe's, before the commit).
type tripCounter struct {
	*Engine
	trips *int
}

// BulkUpdate implements store.BulkLoader.
func (c tripCounter) BulkUpdate(ctx context.Context, fn func(store.Records) error) error {
	return c.Engine.BulkUpdate(ctx, func(r store.Records) error {
		err := fn(r)
		*c.trips = pipeOf(r.(*tx)).trips
		return err
	})
}

// The event rules of a bulk transaction cost no round trip per event: a
// transaction of three devices' events as fleetbench seeds them (and
// their GPS) takes as many round trips for 900 events as for 300.
func TestBulkEventsCostNoRoundTripEach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -40)
	trips := map[int]int{}
	for _, n := range []int{300, 900} {
		e := openPrepared(t)
		var took int
		db, err := store.New(tripCounter{e, &took}, store.Options{Now: func() time.Time { return start.AddDate(0, 0, 30) }})
		if err != nil {
			t.Fatal(err)
		}
		var imeis []string
		err = db.Update(ctx, store.Actor{Source: "test"}, func(tx *store.Tx) error {
			p, err := tx.CreatePartner("Bench")
			if err != nil {
				return err
			}
			o, err := tx.CreateOrganization(p.ID, "Bench fleet", nil)
			if err != nil {
				return err
			}
			for d := range 3 {
				imei := fmt.Sprintf("35693800000%03d%d", d, luhn(fmt.Sprintf("35693800000%03d", d)))
				if err := tx.AddDevice(&store.Device{IMEI: imei, Name: imei, OrganizationID: o.ID, PartnerID: p.ID,
					Status: store.DeviceActivated}); err != nil {
					return err
				}
				imeis = append(imeis, imei)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.BulkUpdate(ctx, store.Actor{Source: "device"}, seedLike(imeis, n, start)); err != nil {
			t.Fatal(err)
		}
		db.Close()
		trips[n] = took
	}
	if trips[300] == 0 || trips[900] != trips[300] {
		t.Errorf("round trips of bulk transactions by events: %v, want as many for 900 as for 300", trips)
	}
}
