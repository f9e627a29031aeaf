package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// fleetOf opens a store at now of n devices of one organization, each
// with a GPS sample a minute before now, so that a group commit knows
// their latest samples and queues their GPS inserts.
func fleetOf(t *testing.T, n int, now time.Time) (*Engine, *store.DB, []*store.Device) {
	t.Helper()
	e := openPrepared(t)
	ensureAround(t, e, now, "gps_samples")
	db, err := store.New(e, store.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var devs []*store.Device
	err = db.Update(t.Context(), store.Actor{Source: "cli"}, func(tx *store.Tx) error {
		p, err := tx.CreatePartner("Partner")
		if err != nil {
			return err
		}
		o, err := tx.CreateOrganization(p.ID, "Fleet", []byte("salt"))
		if err != nil {
			return err
		}
		for i := range n {
			body := fmt.Sprintf("3569381002%04d", i)
			d := &store.Device{IMEI: fmt.Sprintf("%s%d", body, luhn(body)), Name: "cam",
				OrganizationID: o.ID, PartnerID: p.ID, Status: store.DeviceActivated}
			if err := tx.AddDevice(d); err != nil {
				return err
			}
			if _, err := tx.AddGPS(d, []store.GPSPoint{{Time: now.Add(-time.Minute), Lat: 50, Lon: 4}}); err != nil {
				return err
			}
			devs = append(devs, d)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return e, db, devs
}

// gpsBatch stores a GPS message of each of devs, at, with latitude lat, in
// one group commit, and returns each job's error.
func gpsBatch(t *testing.T, db *store.DB, devs []*store.Device, at time.Time, lat func(i int) float64) []error {
	t.Helper()
	c := db.NewCommitter(store.CommitterOptions{MaxBatch: len(devs), Delay: time.Hour})
	defer c.Close()
	var done []<-chan error
	for i, d := range devs {
		done = append(done, c.Submit(t.Context(), store.Actor{Source: "device", IMEI: d.IMEI, OrganizationID: d.OrganizationID},
			func(tx *store.Tx) error {
				_, err := tx.AddGPS(d, []store.GPSPoint{{Time: at, Lat: lat(i), Lon: 4}, {Time: at.Add(time.Second), Lat: lat(i), Lon: 4}})
				return err
			}))
	}
	errs := make([]error, len(done))
	for i, ch := range done {
		errs[i] = <-ch
	}
	return errs
}

// groupStatements runs job for each of n jobs in one group commit's
// transaction of e, which reads ahead the devices of imeis first (when
// there are any), and returns how many statements the transaction sent.
func groupStatements(t *testing.T, e *Engine, now time.Time, imeis []string, n int, job func(r *tx, n int) error) uint64 {
	t.Helper()
	readsEnded(t, e) // the ROLLBACKs of earlier reads count where they were sent
	before := e.sent.statements.Load()
	err := e.UpdateBatch(t.Context(), func(rec store.Records) error {
		r := rec.(*tx)
		if len(imeis) > 0 {
			if err := r.Prefetch(store.ReadAhead{IMEIs: imeis, Now: now}); err != nil {
				return err
			}
		}
		for i := range n {
			r.StartJob(i)
			if err := job(r, i); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	readsEnded(t, e)
	return e.sent.statements.Load() - before
}

// TestGPSInsertsMerged: the GPS inserts a group commit queues go as one
// statement, so a batch of nine messages sends as many statements as a
// batch of three, and every sample is stored.
func TestGPSInsertsMerged(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	e, db, devs := fleetOf(t, 9, now)
	gpsBatch(t, db, devs, now.Add(-50*time.Second), func(int) float64 { return 51 }) // a batch as warm-up
	statements := map[int]uint64{}
	for k, n := range []int{3, 9} {
		readsEnded(t, e) // the ROLLBACKs of earlier reads count where they were sent
		before := e.sent.statements.Load()
		for i, err := range gpsBatch(t, db, devs[:n], now.Add(time.Duration(10*k-40)*time.Second), func(int) float64 { return 52 }) {
			if err != nil {
				t.Fatalf("batch of %d, message %d: %v", n, i, err)
			}
		}
		readsEnded(t, e)
		statements[n] = e.sent.statements.Load() - before
	}
	if statements[9] != statements[3] {
		t.Errorf("statements sent for a batch of GPS messages: %v by batch size, want as many for 9 as for 3", statements)
	}
	err := db.View(t.Context(), func(tx *store.Tx) error {
		for _, d := range devs {
			pts, err := tx.GPS(d.IMEI, now.Add(-time.Hour), now, 0)
			if err != nil {
				return err
			}
			// The first sample, the warm-up's two, and two of each batch the device was in.
			want := 3 + 2 + map[bool]int{true: 2, false: 0}[d == devs[0] || d == devs[1] || d == devs[2]]
			if len(pts) != want {
				t.Errorf("device %s: %d samples stored, want %d", d.IMEI, len(pts), want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMergedInsertFailure: a merged GPS insert that fails on one job's
// row fails its transaction as a conflict, which the group commit splits
// until the row's job is alone; an insert of that job alone fails as that
// job's. (The row breaks a check the rules would not let through: the
// records queue it directly.)
func TestMergedInsertFailure(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	e, _, devs := fleetOf(t, 3, now)
	batch := func(devs []*store.Device, bad int) error {
		return e.UpdateBatch(t.Context(), func(rec store.Records) error {
			r := rec.(*tx)
			a := store.ReadAhead{Now: now}
			for _, d := range devs {
				a.IMEIs = append(a.IMEIs, d.IMEI)
			}
			if err := r.Prefetch(a); err != nil {
				return err
			}
			for n, d := range devs {
				r.StartJob(n)
				lat := 52.0
				if n == bad {
					lat = 95 // beyond the table's check
				}
				if _, err := r.GPSSamples().Insert(d.IMEI, d.Ownership, []store.GPSPoint{{Time: now, Lat: lat, Lon: 4}}); err != nil {
					return err
				}
			}
			if q := len(pipeOf(r).queued); q != len(devs) {
				t.Errorf("%d statements queued for %d GPS messages, want one each", q, len(devs))
			}
			return nil
		})
	}
	err := batch(devs, 1)
	if !errors.Is(err, store.ErrTxConflict) {
		t.Errorf("a merged insert with a bad row: %v, want a conflict", err)
	}
	err = batch(devs[1:2], 0)
	var jf *store.JobFailed
	if !errors.As(err, &jf) || jf.Job != 0 || errors.Is(err, store.ErrTxConflict) {
		t.Errorf("the bad row's job alone: %v, want its own failure", err)
	}
	if err := batch([]*store.Device{devs[0], devs[2]}, -1); err != nil {
		t.Fatal(err)
	}
	read(t, e, func(r *tx) error {
		for i, d := range devs {
			p, ok, err := r.GPSSamples().Latest(d.IMEI, now, now, store.GPSFilter{})
			if err != nil {
				return err
			}
			if ok != (i != 1) || ok && p.Lat != 52 {
				t.Errorf("device %d: latest at now %+v (%v), want one stored for the good rows only", i, p, ok)
			}
		}
		return nil
	})
}

// TestDeviceLinksMerged: the device_links upserts a group commit queues
// go as one statement (as many statements for nine devices as for three),
// two upserts of one device never share one (the later wins), and every
// column reads back as written, NULLs included.
func TestDeviceLinksMerged(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	e, _, devs := fleetOf(t, 9, now)
	link := func(d *store.Device, n int) *store.DeviceLink {
		l := &store.DeviceLink{IMEI: d.IMEI, Presence: store.PresenceOnline, ConnectionID: fmt.Sprintf("c%d", n),
			ConnectedAt: now, LastSeen: now.Add(time.Duration(n) * time.Second), ProtocolVersion: 5,
			RemoteAddr: "192.0.2.1:4000", Firmware: "3.14", ProductType: "AI-14", AckedConfigVersion: int64(n)}
		if n%2 == 1 {
			l.Health = &store.DeviceHealth{RecordingTest: "pass", ReportedAt: now}
			l.ReportedConfig = json.RawMessage(`{"events":{"speeding":true}}`) // kept as sent
			l.ConfigAckedAt, l.DisconnectedAt, l.Legacy = now, now.Add(-time.Hour), true
		}
		return l
	}
	batch := func(links []*store.DeviceLink) uint64 {
		return groupStatements(t, e, now, nil, len(links), func(r *tx, n int) error { return r.DeviceLinks().Put(links[n]) })
	}
	var three, nine []*store.DeviceLink
	for i, d := range devs {
		if i < 3 {
			three = append(three, link(d, i))
		}
		nine = append(nine, link(d, i+10))
	}
	if s3, s9 := batch(three), batch(nine); s3 != s9 {
		t.Errorf("statements for device link upserts: %d for 3 devices, %d for 9, want as many", s3, s9)
	}
	// Device 0 twice in a row, then device 1: three upserts, two statements.
	if s := batch([]*store.DeviceLink{link(devs[0], 20), link(devs[0], 21), link(devs[1], 22)}); s != 4 {
		t.Errorf("%d statements for two upserts of one device and one of another, want 4 (BEGIN, two, COMMIT)", s)
	}
	want := map[string]*store.DeviceLink{devs[0].IMEI: link(devs[0], 21), devs[1].IMEI: link(devs[1], 22)}
	for i, d := range devs[2:] {
		want[d.IMEI] = link(d, i+12)
	}
	read(t, e, func(r *tx) error {
		for imei, w := range want {
			got, err := r.DeviceLinks().Get(imei)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("device %s: read back %+v, want %+v", imei, got, w)
			}
		}
		return nil
	})
}

// TestMessagesMerged: the messages of a group commit are appended in one
// statement at its commit (as many statements for nine as for three), in
// the order the jobs appended them, each read back as written.
func TestMessagesMerged(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	e, _, devs := fleetOf(t, 9, now)
	msg := func(d *store.Device, n int) store.Message {
		m := store.Message{Kind: store.MessageEvent, SubType: "speeding", OrganizationID: d.OrganizationID, IMEI: d.IMEI,
			Time:  now.Add(time.Duration(n) * time.Second),
			Event: &store.EventFact{ID: int64(n), Type: "speeding", Time: now, Lat: 50.5}}
		if n%2 == 1 {
			m.PartnerID, m.SubType = d.PartnerID, ""
			m.Event, m.Presence = nil, &store.PresenceFact{Status: store.PresenceOnline, Previous: store.PresenceOffline}
		}
		return m
	}
	var last int64
	batch := func(msgs []store.Message) uint64 {
		sent := groupStatements(t, e, now, nil, len(msgs), func(r *tx, n int) error { return r.Messages().Append(&msgs[n]) })
		read(t, e, func(r *tx) error {
			got, err := r.Messages().After(last, 0)
			if err != nil {
				return err
			}
			if len(got) != len(msgs) {
				t.Fatalf("%d messages read back, want %d", len(got), len(msgs))
			}
			for i := range got {
				if got[i].Seq <= last {
					t.Errorf("message %d: sequence %d after %d", i, got[i].Seq, last)
				}
				last = got[i].Seq
				got[i].Seq, got[i].Time = 0, got[i].Time.UTC()
				if !reflect.DeepEqual(got[i], msgs[i]) {
					t.Errorf("message %d read back %+v, want %+v", i, got[i], msgs[i])
				}
			}
			return nil
		})
		return sent
	}
	var three, nine []store.Message
	for i, d := range devs {
		if i < 3 {
			three = append(three, msg(d, i))
		}
		nine = append(nine, msg(d, 10+i))
	}
	if s3, s9 := batch(three), batch(nine); s3 != s9 {
		t.Errorf("statements for appending messages: %d for 3, %d for 9, want as many", s3, s9)
	}
}

// TestWritesMergedByKind: jobs that each write a device link, a health
// state, their device's row (read ahead) and an audit entry send one
// statement of each kind, however many jobs there are (as many for nine
// as for three), and a write that does not merge (an event's device id)
// ends the run the kinds regroup in: the writes after it go in
// statements of their own. Every row reads back as written, the audit
// entries in the jobs' order.
func TestWritesMergedByKind(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	e, _, devs := fleetOf(t, 9, now)
	job := func(r *tx, d *store.Device, n int) error {
		if err := r.DeviceLinks().Put(&store.DeviceLink{IMEI: d.IMEI, Presence: store.PresenceOnline,
			ConnectionID: fmt.Sprintf("c%d", n), LastSeen: now}); err != nil {
			return err
		}
		if err := r.DeviceHealthStates().Put(&store.HealthState{IMEI: d.IMEI, RecordingTest: "passed",
			AdasCalibrated: n%2 == 0, ReportedAt: now.Add(time.Duration(n) * time.Second)}); err != nil {
			return err
		}
		dev, err := r.Devices().Get(d.IMEI)
		if err != nil {
			return err
		}
		dev.ProductType = fmt.Sprintf("P%d", n)
		if err := r.Devices().Put(dev); err != nil {
			return err
		}
		return r.AuditEntries().Append(&store.AuditEntry{Time: now, OrganizationID: d.OrganizationID, Source: "device",
			Action: "device.productType.report", EntityType: "device", EntityID: d.IMEI, Reason: fmt.Sprint(n),
			After: json.RawMessage(`{"n":` + fmt.Sprint(n) + `}`)})
	}
	batch := func(devs []*store.Device, first int, between func(r *tx) error) uint64 {
		var imeis []string
		for _, d := range devs {
			imeis = append(imeis, d.IMEI)
		}
		return groupStatements(t, e, now, imeis, len(devs), func(r *tx, i int) error {
			if i == len(devs)/2 && between != nil {
				if err := between(r); err != nil {
					return err
				}
			}
			return job(r, devs[i], first+i)
		})
	}
	s3, s9 := batch(devs[:3], 0, nil), batch(devs, 10, nil)
	if s3 != s9 {
		t.Errorf("statements for 3 and 9 jobs: %d and %d, want as many", s3, s9)
	}
	// An event's device id between job 4 and 5: two runs of three kinds.
	split := batch(devs, 20, func(r *tx) error {
		return r.queue(`INSERT INTO event_device_ids (imei, device_event_id, event_id, ownership) VALUES ($1, 'x', 1, 0)`, devs[0].IMEI)
	})
	if split != s9+5 {
		t.Errorf("statements with a write between the jobs: %d, want %d (the write and another of each of the 4 kinds)", split, s9+5)
	}
	read(t, e, func(r *tx) error {
		for i, d := range devs {
			h, err := r.DeviceHealthStates().Get(d.IMEI)
			if err != nil {
				return err
			}
			if want := now.Add(time.Duration(20+i) * time.Second); !h.ReportedAt.Equal(want) || h.AdasCalibrated != (i%2 == 0) || h.RecordingTest != "passed" {
				t.Errorf("device %d: health %+v, want reported at %v", i, h, want)
			}
			dev, err := r.Devices().Get(d.IMEI)
			if err != nil {
				return err
			}
			if dev.ProductType != fmt.Sprintf("P%d", 20+i) {
				t.Errorf("device %d: product type %q, want P%d", i, dev.ProductType, 20+i)
			}
			l, err := r.DeviceLinks().Get(d.IMEI)
			if err != nil {
				return err
			}
			if l.ConnectionID != fmt.Sprintf("c%d", 20+i) {
				t.Errorf("device %d: link of connection %q, want c%d", i, l.ConnectionID, 20+i)
			}
		}
		entries, _, err := r.AuditEntries().List(t.Context(), store.AuditFilter{Action: "device.productType.report"}, store.Page{})
		if err != nil {
			return err
		}
		if len(entries) != 21 {
			t.Errorf("%d audit entries, want 21", len(entries))
			return nil
		}
		// Newest first: ids rise in the order the jobs appended them.
		for i := range entries[1:] {
			if entries[i].ID <= entries[i+1].ID {
				t.Errorf("audit entries %d and %d: ids %d and %d, want falling", i, i+1, entries[i].ID, entries[i+1].ID)
			}
		}
		if e := entries[0]; e.Reason != "28" || string(e.After) != `{"n":28}` || e.OrganizationID != devs[8].OrganizationID {
			t.Errorf("the last audit entry: %+v", e)
		}
		return nil
	})
}

// TestMergedRowsInKeyOrder: the rows of a merged write that each name the
// row they change go in the order of their keys, so that every
// transaction locks such rows in one order; inserts of new rows keep the
// order they were queued in.
func TestMergedRowsInKeyOrder(t *testing.T) {
	t.Parallel()
	keyed := &mergeKind{sql: "keyed", args: func(all []mergeable) []any { return []any{column[string](all, 0)} }}
	added := &mergeKind{sql: "added", args: func(all []mergeable) []any { return []any{column[string](all, 0)} }}
	var queued []queuedStmt
	for _, k := range []string{"c", "a", "b"} {
		queued = append(queued, queuedStmt{sql: "one keyed", args: []any{k}, merge: &argsRow{of: keyed, id: k, args: []any{k}}},
			queuedStmt{sql: "one added", args: []any{k}, merge: &argsRow{of: added, args: []any{k}}})
	}
	b := &pgx.Batch{}
	mergeQueued(b, queued)
	got := map[string][]string{}
	for _, q := range b.QueuedQueries {
		got[q.SQL] = q.Arguments[0].([]string)
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(got["keyed"], want) {
		t.Errorf("keyed rows merged as %v, want %v", got["keyed"], want)
	}
	if want := []string{"c", "a", "b"}; !slices.Equal(got["added"], want) {
		t.Errorf("added rows merged as %v, want %v", got["added"], want)
	}
}
