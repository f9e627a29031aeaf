package postgres

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// A bulk transaction (store.BulkLoader) runs the store's rules as any
// other, through the same record methods; the records of the time series
// that they add (events with their files and comments, the devices' event
// ids, webhook messages, GPS samples) are held and written by COPY, up to
// bulkBatch of a kind at a time, instead of one statement each:
//
//   - The events go through copyEvents, as a copy's do, which adds each
//     batch's hourly and daily counts (eventcounts.go) under the engine's
//     node in the same transaction: what the events' ordinary Insert
//     counts one by one.
//   - An event's id is the events identity's next value, as an INSERT
//     would draw it: the transaction holds the events table against other
//     writers (SHARE ROW EXCLUSIVE) from its first event to its end, draws
//     one value and counts on from it, and sets the identity to the last
//     id it gave with each COPY. Messages take their sequences from their
//     identity in the order they were appended, under the advisory lock
//     every appender takes.
//   - Before the rows of a UTC day go to a day-partitioned table (events
//     and their files, GPS samples), the day's partition is made (as
//     Maintain makes those around now), so that a bulk load of past days
//     leaves the partitions a store that ran through them would have.
//   - Every read sees every write before it: whatever statement of its
//     own the transaction sends (or queues) goes after the held writes
//     (pipe.heldWrites). The few reads the event rules make for every
//     event are answered without one: a device's event ids, driver
//     sessions and driver assignments, and the drivers, are read once
//     per device (or driver) and kept, with the held writes laid over
//     them, until the transaction sends a statement of its own, which may
//     change them; the rows of the memo (memo.go), of tables it holds no
//     writes for, are read without sending the held writes, and decoded
//     with a type map of their own (decodeTypes), since a COPY may be
//     using the connection's.
//   - The COPYs run on the connection while the rules go on with the next
//     records, which need no round trip until a batch is full again.
//
// What the transaction leaves is what the same rules leave in an ordinary
// one; only the partitions of past days differ, which an ordinary write
// of a day without one leaves to the default partition.

var _ store.BulkLoader = (*Engine)(nil)

// BulkUpdate implements store.BulkLoader: Update (SERIALIZABLE, run again
// after a conflict), with the time series' new records held and written by
// COPY.
func (e *Engine) BulkUpdate(ctx context.Context, fn func(store.Records) error) error {
	return e.updateAt(ctx, pgx.Serializable, retryWindow, func(t *tx) error {
		newBulk(t)
		return fn(t)
	})
}

// bulkBatch is how many records of a kind a bulk transaction holds before
// it writes them (a variable for tests).
var bulkBatch = 10_000

// deviceIDsReadAhead is how many event ids of one device a bulk
// transaction reads at once; a device with more has each looked up.
const deviceIDsReadAhead = 10_000

// bulk is what a bulk transaction holds: its writes, and what it read
// ahead.
type bulk struct {
	t *tx

	events    []*store.Event
	deviceIDs []store.EventDeviceID
	heldIDs   map[deviceEventKey]int // index in deviceIDs
	messages  [][]any
	gps       [][]any
	gpsHeld   map[string]map[int64]bool // the milliseconds of each device's held samples

	// inflight is the write on the connection, until settled.
	inflight chan error

	// lastEvent is the last event id given, idsSet the last the identity
	// was set to; eventsLocked once the events table is held and lastEvent
	// drawn.
	lastEvent, idsSet int64
	eventsLocked      bool
	messagesLocked    bool
	// days are the partitions made (or found) so far, by table.
	days             map[string]map[time.Time]bool
	partitionsLocked bool

	// Read ahead, by device, and the drivers read.
	storedIDs   map[string]*storedDeviceIDs
	sessions    map[string][]store.DriverSession
	assignments map[string][]store.DriverAssignment
	drivers     map[int64]driverRead
	driverLists map[driverListKey]driverList
}

// driverRead is a driver as Get read it, or its error.
type driverRead struct {
	d   store.Driver
	err error
}

// driverListKey is what a List of drivers without name patterns selects.
type driverListKey struct {
	orgs, id, thirdPartyID, active string
	sort                           store.Sort
	page                           store.Page
}

// driverList is a List of drivers as read.
type driverList struct {
	list  []store.Driver
	total int
}

// deviceEventKey is a device's event id.
type deviceEventKey struct{ imei, id string }

// storedDeviceIDs are a device's stored event ids as read; all of them
// unless the device has more than deviceIDsReadAhead.
type storedDeviceIDs struct {
	ids  map[string]store.EventDeviceID
	some bool
}

// newBulk makes t a bulk transaction.
func newBulk(t *tx) *bulk {
	b := &bulk{t: t, heldIDs: map[deviceEventKey]int{}, gpsHeld: map[string]map[int64]bool{},
		days: map[string]map[time.Time]bool{}}
	t.bulk = b
	if p := pipeOf(t); p != nil {
		p.held = b
	}
	return b
}

// quietly runs fn, whose statements are the bulk transaction's own
// bookkeeping: they neither send the held writes nor forget what was read.
func (b *bulk) quietly(fn func() error) error {
	p := pipeOf(b.t)
	if p == nil || p.quiet {
		return fn()
	}
	p.quiet = true
	defer func() { p.quiet = false }()
	return fn()
}

// pending implements heldWrites: records, or event ids given that the
// identity has not passed yet.
func (b *bulk) pending() bool {
	return len(b.events)+len(b.deviceIDs)+len(b.messages)+len(b.gps) > 0 || b.lastEvent > b.idsSet
}

// forget implements heldWrites.
func (b *bulk) forget() {
	b.storedIDs, b.sessions, b.assignments, b.drivers, b.driverLists = nil, nil, nil, nil, nil
}

// discard implements heldWrites. The locks taken and the partitions made
// since the savepoint went with it; the ids given stay given.
func (b *bulk) discard() {
	b.events, b.deviceIDs, b.messages, b.gps = nil, nil, nil, nil
	clear(b.heldIDs)
	clear(b.gpsHeld)
	// What the memo learnt of the devices' latest samples may have been
	// the samples dropped.
	b.t.memo.gps = nil
	b.eventsLocked, b.messagesLocked, b.partitionsLocked = false, false, false
	b.days = map[string]map[time.Time]bool{}
	b.forget()
}

// full writes what is held once a kind has bulkBatch records.
func (b *bulk) full() error {
	if max(len(b.events), len(b.deviceIDs), len(b.messages), len(b.gps)) < bulkBatch {
		return nil
	}
	return b.quietly(b.write)
}

// write implements heldWrites: each kind's held records by COPY, the
// partitions of their days made first. The COPYs run on the connection
// while the transaction's rules go on with the next records, which need
// no round trip of their own until a batch is full again; whatever uses
// the connection waits for them first (settle).
func (b *bulk) write() error {
	p := pipeOf(b.t)
	if err := p.settle(); err != nil {
		return err
	}
	t := b.t
	w := &bulkWrite{node: t.node}
	if b.lastEvent > b.idsSet {
		w.lastEvent, b.idsSet = b.lastEvent, b.lastEvent
	}
	if w.events = b.events; len(w.events) > 0 {
		b.events = nil
		days := make([]time.Time, len(w.events))
		for i, e := range w.events {
			days[i] = e.Time
		}
		if err := b.ensureDays(days, "events", "event_files"); err != nil {
			return err
		}
	}
	if w.deviceIDs = b.deviceIDs; len(w.deviceIDs) > 0 {
		b.deviceIDs = nil
		clear(b.heldIDs)
		for _, r := range w.deviceIDs {
			if s := b.storedIDs[r.IMEI]; s != nil {
				s.ids[r.DeviceEventID] = r
			}
		}
	}
	if w.messages = b.messages; len(w.messages) > 0 {
		b.messages = nil
		if !b.messagesLocked {
			if _, err := t.exec(`SELECT pg_advisory_xact_lock($1)`, int64(messageSeqLockID)); err != nil {
				return err
			}
			b.messagesLocked = true
		}
	}
	if w.gps = b.gps; len(w.gps) > 0 {
		b.gps = nil
		clear(b.gpsHeld)
		days := make([]time.Time, len(w.gps))
		for i, r := range w.gps {
			days[i] = r[1].(pgtype.Timestamptz).Time
		}
		if err := b.ensureDays(days, "gps_samples"); err != nil {
			return err
		}
	}
	// The BEGIN and the writes queued before these go first.
	if err := p.flush(t.ctx); err != nil {
		return err
	}
	done := make(chan error, 1)
	b.inflight = done
	go func() { done <- w.run(connCopier{t.ctx, p.conn}) }()
	return nil
}

// settle implements heldWrites.
func (b *bulk) settle() error {
	if b.inflight == nil {
		return nil
	}
	err := <-b.inflight
	b.inflight = nil
	return err
}

// bulkWrite is what one write of a bulk transaction sends.
type bulkWrite struct {
	node      string // the engine's node, which counts the events
	events    []*store.Event
	lastEvent int64 // the identity's new last value, 0 for none
	deviceIDs []store.EventDeviceID
	messages  [][]any
	gps       [][]any
}

// run sends w with c: each kind by COPY, the events with their counts
// (copyEvents), and the events identity past the last id given
// (never back: after a savepoint rolled back with the lock, others may
// have drawn beyond it).
func (w *bulkWrite) run(c copier) error {
	if err := copyEvents(w.events, w.node, c); err != nil {
		return err
	}
	if w.lastEvent > 0 {
		err := c.run(`SELECT setval(s, greatest($1, coalesce(pg_sequence_last_value(s), 0)))
			FROM (SELECT pg_get_serial_sequence('events', 'id')::regclass AS s) q`, w.lastEvent)
		if err != nil {
			return err
		}
	}
	ids := make([][]any, len(w.deviceIDs))
	for i := range w.deviceIDs {
		ids[i] = eventDeviceIDArgs(&w.deviceIDs[i])
	}
	if err := c.copyRows("event_device_ids", eventDeviceIDColumns, ids); err != nil {
		return err
	}
	if err := c.copyRows("messages", messageRowColumns, w.messages); err != nil {
		return err
	}
	return c.copyRows("gps_samples", gpsRowColumns, w.gps)
}

// ensureDays makes the partitions of each table for the UTC days of times
// that the transaction has not made or found yet, under the lock
// Maintain takes.
func (b *bulk) ensureDays(times []time.Time, tables ...string) error {
	for _, table := range tables {
		i := slices.IndexFunc(partitionedTables, func(p partitionedTable) bool { return p.table == table })
		p := partitionedTables[i]
		done := b.days[table]
		if done == nil {
			done = map[time.Time]bool{}
			b.days[table] = done
		}
		for _, at := range times {
			first := p.unit.start(at)
			if done[first] {
				continue
			}
			if !b.partitionsLocked {
				if _, err := b.t.exec(`SELECT pg_advisory_xact_lock($1)`, int64(partitionsLockID)); err != nil {
					return err
				}
				b.partitionsLocked = true
			}
			if err := p.ensureRange(b.t.ctx, b.t.pg, first, p.unit.add(first, 1)); err != nil {
				return classify(err)
			}
			done[first] = true
		}
	}
	return nil
}

// insertEvent holds e as a new event, giving it the next id.
func (b *bulk) insertEvent(e *store.Event) error {
	if !b.eventsLocked {
		err := b.quietly(func() error {
			if _, err := b.t.exec(`LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE`); err != nil {
				return err
			}
			// Past the ids given before, by this transaction too (before
			// a savepoint that took the lock with it was rolled back).
			var next int64
			err := b.t.pg.QueryRow(b.t.ctx, `SELECT nextval(pg_get_serial_sequence('events', 'id'))`).Scan(&next)
			b.lastEvent = max(b.lastEvent, next-1)
			return classify(err)
		})
		if err != nil {
			return err
		}
		b.eventsLocked = true
	}
	b.lastEvent++
	e.ID = b.lastEvent
	held := *e
	held.Files = slices.Clone(e.Files)
	held.Comments = slices.Clone(e.Comments)
	if e.SDCard != nil {
		card := *e.SDCard
		held.SDCard = &card
	}
	b.events = append(b.events, &held)
	return b.full()
}

// deviceID is imei's device event id deviceEventID: held, or stored.
func (b *bulk) deviceID(imei, deviceEventID string) (store.EventDeviceID, bool, error) {
	if i, ok := b.heldIDs[deviceEventKey{imei, deviceEventID}]; ok {
		return b.deviceIDs[i], true, nil
	}
	s, err := b.storedDeviceIDs(imei)
	if err != nil {
		return store.EventDeviceID{}, false, err
	}
	if r, ok := s.ids[deviceEventID]; ok || !s.some {
		return r, ok, nil
	}
	var r store.EventDeviceID
	err = b.quietly(func() error {
		var err error
		r, err = eventDeviceIDs{b.t}.get(imei, deviceEventID)
		return err
	})
	if err == errNoEventDeviceID {
		return r, false, nil
	}
	return r, err == nil, err
}

// storedDeviceIDs are imei's stored event ids, read once.
func (b *bulk) storedDeviceIDs(imei string) (*storedDeviceIDs, error) {
	if s := b.storedIDs[imei]; s != nil {
		return s, nil
	}
	s := &storedDeviceIDs{ids: map[string]store.EventDeviceID{}}
	err := b.quietly(func() error {
		// In key order: the primary key's index, whatever the planner
		// knows of a table that grew in this transaction.
		rows, err := b.t.pg.Query(b.t.ctx, `SELECT `+eventDeviceIDColumns+` FROM event_device_ids WHERE imei = $1
			ORDER BY device_event_id LIMIT $2`, imei, deviceIDsReadAhead+1)
		if err != nil {
			return classify(err)
		}
		defer rows.Close()
		for rows.Next() {
			var r store.EventDeviceID
			if err := rows.Scan(eventDeviceIDFields(&r)...); err != nil {
				return classify(err)
			}
			s.ids[r.DeviceEventID] = r
		}
		return classify(rows.Err())
	})
	if err != nil {
		return nil, err
	}
	if len(s.ids) > deviceIDsReadAhead {
		s.ids, s.some = map[string]store.EventDeviceID{}, true
	}
	if b.storedIDs == nil {
		b.storedIDs = map[string]*storedDeviceIDs{}
	}
	b.storedIDs[imei] = s
	return s, nil
}

// putDeviceID holds r, unless r's device and id are stored already: then
// it is written over them as Put writes it.
func (b *bulk) putDeviceID(r store.EventDeviceID) error {
	k := deviceEventKey{r.IMEI, r.DeviceEventID}
	if i, ok := b.heldIDs[k]; ok {
		b.deviceIDs[i] = r
		return nil
	}
	if _, stored, err := b.deviceID(r.IMEI, r.DeviceEventID); err != nil {
		return err
	} else if stored {
		return eventDeviceIDs{b.t}.upsert(r)
	}
	b.heldIDs[k] = len(b.deviceIDs)
	b.deviceIDs = append(b.deviceIDs, r)
	return b.full()
}

// appendMessage holds msg, whose sequence is drawn when it is written.
func (b *bulk) appendMessage(msg *store.Message) error {
	args, err := messageArgs(msg)
	if err != nil {
		return err
	}
	b.messages = append(b.messages, args)
	return b.full()
}

// insertGPS holds imei's points that are new, the first of each
// millisecond neither stored nor held, and says which they are, as
// gpsSamples.Insert does. It keeps the transaction's memo of the device's
// latest sample as Insert does (gpssamples.go): when the device's latest
// sample is known and every point is later, no point can be stored or
// held already, and nothing is read; otherwise the stored samples of the
// points' time range are read (without sending the held ones, which are
// laid over them).
func (b *bulk) insertGPS(imei string, ownership int64, points []store.GPSPoint) ([]bool, error) {
	known := b.t.memo.gps[imei]
	held := b.gpsHeld[imei]
	if held == nil {
		held = map[int64]bool{}
		b.gpsHeld[imei] = held
	}
	var added []bool
	if known.latest.ok && allAfter(points, known.latest.at.Time) {
		added = firstOfEachMilli(points, nil)
	} else {
		lo, hi := milli(points[0].Time), milli(points[0].Time)
		for _, p := range points[1:] {
			at := milli(p.Time)
			if at.Before(lo) {
				lo = at
			}
			if at.After(hi) {
				hi = at
			}
		}
		var stored []time.Time
		err := b.quietly(func() error {
			rows, err := b.t.pg.Query(b.t.ctx, `SELECT sampled_at FROM gps_samples WHERE imei = $1 AND sampled_at BETWEEN $2 AND $3`,
				imei, timeBound(lo), timeBound(hi))
			if err != nil {
				return classify(err)
			}
			stored, err = pgx.CollectRows(rows, pgx.RowTo[time.Time])
			return classify(err)
		})
		if err != nil {
			return nil, err
		}
		taken := make(map[int64]bool, len(stored))
		for _, at := range stored {
			taken[at.UnixMilli()] = true
		}
		fresh := make(map[int64]bool, len(points))
		for _, p := range points {
			if ms := p.Time.UnixMilli(); !taken[ms] && !held[ms] {
				fresh[ms] = true
			}
		}
		added = firstOfEachMilli(points, fresh)
	}
	for i, p := range points {
		if added[i] {
			held[p.Time.UnixMilli()] = true
			b.gps = append(b.gps, gpsArgs(imei, ownership, p))
		}
	}
	if known.latest.ok {
		b.t.learnGPS(imei, known, ownership, points, added)
	} else {
		delete(b.t.memo.gps, imei)
	}
	return added, b.full()
}

// lastStarted is LastStarted from imei's sessions, read once.
func (b *bulk) lastStarted(imei string, at time.Time) (*store.DriverSession, error) {
	list, ok := b.sessions[imei]
	if !ok {
		err := b.quietly(func() error {
			var err error
			list, err = driverSessions{b.t}.list(`SELECT `+sessionColumns+` FROM driver_sessions WHERE imei = $1
				ORDER BY started_at`, imei)
			return err
		})
		if err != nil {
			return nil, err
		}
		if b.sessions == nil {
			b.sessions = map[string][]store.DriverSession{}
		}
		b.sessions[imei] = list
	}
	before := sessionStart(at).Add(time.Millisecond)
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].Start.Before(before) {
			s := list[i]
			return &s, nil
		}
	}
	return nil, nil
}

// deviceAssignments is ByDevice from imei's assignments, read once.
func (b *bulk) deviceAssignments(imei string) ([]store.DriverAssignment, error) {
	list, ok := b.assignments[imei]
	if !ok {
		err := b.quietly(func() error {
			var err error
			list, err = driverAssignments{b.t}.byDevice(imei)
			return err
		})
		if err != nil {
			return nil, err
		}
		if b.assignments == nil {
			b.assignments = map[string][]store.DriverAssignment{}
		}
		b.assignments[imei] = list
	}
	return slices.Clone(list), nil
}

// driver is Get of driver id, read once.
func (b *bulk) driver(id int64) (*store.Driver, error) {
	r, ok := b.drivers[id]
	if !ok {
		err := b.quietly(func() error {
			d, err := drivers{b.t}.get(id)
			if d != nil {
				r.d = *d
			}
			r.err = err
			return nil
		})
		if err != nil {
			return nil, err
		}
		if b.drivers == nil {
			b.drivers = map[int64]driverRead{}
		}
		b.drivers[id] = r
	}
	if r.err != nil {
		return nil, r.err
	}
	d := r.d
	return &d, nil
}

// driverList is List of the drivers f selects, read once for each f
// without name patterns.
func (b *bulk) driverList(f store.DriverFilter, o store.Sort, p store.Page) ([]store.Driver, int, error) {
	if f.FirstName != nil || f.LastName != nil {
		return drivers{b.t}.list(f, o, p)
	}
	orgs := slices.Sorted(maps.Keys(f.OrganizationIDs))
	k := driverListKey{orgs: fmt.Sprint(f.OrganizationIDs != nil, orgs), id: fmt.Sprint(f.ID), thirdPartyID: f.ThirdPartyID,
		active: "any", sort: o, page: p}
	if f.IsActive != nil {
		k.active = fmt.Sprint(*f.IsActive)
	}
	r, ok := b.driverLists[k]
	if !ok {
		err := b.quietly(func() error {
			var err error
			r.list, r.total, err = drivers{b.t}.list(f, o, p)
			return err
		})
		if err != nil {
			return nil, 0, err
		}
		if b.driverLists == nil {
			b.driverLists = map[driverListKey]driverList{}
		}
		b.driverLists[k] = r
	}
	return slices.Clone(r.list), r.total, nil
}
