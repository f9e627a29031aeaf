package postgres

import (
	"errors"
	"maps"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// gpsSamples are the GPS samples: table gps_samples, partitioned by day,
// one row per device and millisecond with the ownership it was recorded
// for. Every query is one range of the primary key (imei, sampled_at).
type gpsSamples struct{ t *tx }

// GPSSamples implements store.TrackRecords.
func (t *tx) GPSSamples() store.GPSSampleRecords { return gpsSamples{t} }

// gpsColumns are the columns gpsFields scans.
const gpsColumns = `sampled_at, lat, lon, alt, speed, accuracy, heading`

// gpsFields are the scan targets of gpsColumns in p.
func gpsFields(p *store.GPSPoint) []any {
	return []any{zeroTime{&p.Time}, &p.Lat, &p.Lon, &p.Alt, &p.Speed, &p.Accuracy, &p.Heading}
}

// insertGPS stores a device's samples in one statement: the columns go as
// arrays, in the order of the points, and a millisecond the device has a
// sample at, or had earlier in the statement, stores nothing. It returns
// the milliseconds it stored.
const insertGPS = `INSERT INTO gps_samples (` + gpsRowColumns + `)
	SELECT $1, s.at, $2, s.lat, s.lon, s.alt, s.speed, s.accuracy, s.heading
	FROM unnest($3::timestamptz[], $4::float8[], $5::float8[], $6::float8[], $7::float8[], $8::float8[], $9::float8[])
		WITH ORDINALITY AS s (at, lat, lon, alt, speed, accuracy, heading, n)
	ORDER BY s.n
	ON CONFLICT (imei, sampled_at) DO NOTHING
	RETURNING sampled_at`

// Insert implements store.GPSSampleRecords: the points of one call in one
// statement. When the transaction knows the device's latest sample (read
// ahead, or kept from its own earlier insert) and every point is later,
// no point can be stored already: the statement is queued with no answer
// to wait for, and the first point of each millisecond is the one stored.
// (A point a concurrent transaction stored at the same millisecond, out of
// this one's sight, fails the commit as a serialisation conflict, and the
// group commit runs again.)
func (r gpsSamples) Insert(imei string, ownership int64, points []store.GPSPoint) ([]bool, error) {
	if len(points) == 0 {
		return nil, nil
	}
	if b := r.t.bulk; b != nil {
		return b.insertGPS(imei, ownership, points)
	}
	known := r.t.memo.gps[imei]
	if known.latest.ok && allAfter(points, known.latest.at.Time) {
		stored := firstOfEachMilli(points, nil)
		if err := r.t.queueGPS(gpsArrays(imei, ownership, points, stored)); err != nil {
			return nil, err
		}
		r.t.learnGPS(imei, known, ownership, points, stored)
		return stored, nil
	}
	rows, err := r.t.pg.Query(r.t.ctx, insertGPS, gpsArrays(imei, ownership, points, nil).args()...)
	if err != nil {
		return nil, classify(err)
	}
	added, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return nil, classify(err)
	}
	// The first point of each stored millisecond is the one stored.
	fresh := make(map[int64]bool, len(added))
	for _, t := range added {
		fresh[t.UnixMilli()] = true
	}
	stored := firstOfEachMilli(points, fresh)
	if known.latest.ok {
		r.t.learnGPS(imei, known, ownership, points, stored)
	} else {
		delete(r.t.memo.gps, imei)
	}
	return stored, nil
}

// insertGPSQueued is insertGPS for points none of which can be stored
// yet, one per millisecond: no conflict to skip, nothing to return. The
// queued inserts of neighbouring jobs go as one statement
// (insertGPSRows).
const insertGPSQueued = `INSERT INTO gps_samples (` + gpsRowColumns + `)
	SELECT $1, s.at, $2, s.lat, s.lon, s.alt, s.speed, s.accuracy, s.heading
	FROM unnest($3::timestamptz[], $4::float8[], $5::float8[], $6::float8[], $7::float8[], $8::float8[], $9::float8[])
		AS s (at, lat, lon, alt, speed, accuracy, heading)`

// gpsArrays are imei's points (those keep marks, or all), recorded for
// ownership, as the columns of insertGPS and insertGPSQueued.
func gpsArrays(imei string, ownership int64, points []store.GPSPoint, keep []bool) *gpsRows {
	g := &gpsRows{imei: imei, ownership: ownership}
	for i, p := range points {
		if keep != nil && !keep[i] {
			continue
		}
		g.at = append(g.at, timeBound(milli(p.Time)))
		for c, v := range []float64{p.Lat, p.Lon, p.Alt, p.Speed, p.Accuracy, p.Heading} {
			g.cols[c] = append(g.cols[c], v)
		}
	}
	return g
}

// gpsRows are the samples of one device, as columns.
type gpsRows struct {
	imei      string
	ownership int64
	at        []pgtype.Timestamptz
	cols      [6][]float64 // lat, lon, alt, speed, accuracy, heading
}

// args are the arguments of insertGPS and insertGPSQueued for g.
func (g *gpsRows) args() []any {
	return []any{g.imei, g.ownership, g.at, g.cols[0], g.cols[1], g.cols[2], g.cols[3], g.cols[4], g.cols[5]}
}

// allAfter reports whether every point is after the millisecond of t.
func allAfter(points []store.GPSPoint, t time.Time) bool {
	for _, p := range points {
		if p.Time.UnixMilli() <= t.UnixMilli() {
			return false
		}
	}
	return true
}

// firstOfEachMilli marks the first point of each millisecond, of those in
// fresh when fresh is not nil.
func firstOfEachMilli(points []store.GPSPoint, fresh map[int64]bool) []bool {
	seen := make(map[int64]bool, len(points))
	stored := make([]bool, len(points))
	for i, p := range points {
		ms := p.Time.UnixMilli()
		if !seen[ms] && (fresh == nil || fresh[ms]) {
			stored[i] = true
		}
		seen[ms] = true
	}
	return stored
}

// The latest GPS sample of a device, as a transaction knows it. A GPS
// message's rules ask for it right after storing the message's samples
// (the latest before them: TrackGPS ignores a fix older than one already
// seen), and a group commit holds many messages of the same devices: the
// transaction reads the latest samples of its batch's devices ahead
// (Prefetch), keeps each device's up to date as it stores more, and answers
// "the latest but the ones just stored" from what it knew before them.

// gpsMemo is what a transaction knows of a device's samples.
type gpsMemo struct {
	latest gpsKnown // the latest sample stored
	// before is the latest sample before the last Insert, and added the
	// milliseconds that Insert stored.
	before gpsKnown
	added  map[int64]bool
}

// gpsKnown is a sample known to be the latest of its kind: ok is false
// when nothing is known.
type gpsKnown struct {
	at        store.GPSPoint
	ownership int64 // the ownership it was recorded for
	ok        bool
}

// learnGPS keeps what storing points (stored marks those stored) teaches
// of imei's samples, known before them.
func (t *tx) learnGPS(imei string, known gpsMemo, ownership int64, points []store.GPSPoint, stored []bool) {
	m := gpsMemo{latest: known.latest, before: known.latest, added: map[int64]bool{}}
	for i, p := range points {
		if !stored[i] {
			continue
		}
		ms := p.Time.UnixMilli()
		m.added[ms] = true
		if ms > m.latest.at.Time.UnixMilli() {
			p.Time = time.UnixMilli(ms).UTC()
			m.latest.at, m.latest.ownership = p, ownership
		}
	}
	if t.memo.gps == nil {
		t.memo.gps = map[string]gpsMemo{}
	}
	t.memo.gps[imei] = m
}

// latestBefore answers Latest from the memo when it asks for imei's latest
// sample of any ownership but those its last Insert stored.
func (t *tx) latestBefore(imei string, start, end time.Time, f store.GPSFilter) (gpsKnown, bool) {
	m, ok := t.memo.gps[imei]
	if !ok || !m.before.ok || !start.IsZero() || end.UnixMilli() != math.MaxInt64 || f.Holder != nil || len(m.added) == 0 {
		return gpsKnown{}, false
	}
	except := make(map[int64]bool, len(f.Except))
	for _, p := range f.Except {
		except[p.Time.UnixMilli()] = true
	}
	if !maps.Equal(except, m.added) {
		return gpsKnown{}, false
	}
	return m.before, true
}

// latestKnown answers Latest, when it excludes no sample, from imei's
// latest sample the transaction knows: when that sample is before start,
// there is none in the range; when it is in the range and of the holder's
// ownership, it is the one. ok is false when it cannot tell.
func (t *tx) latestKnown(imei string, start, end time.Time, f store.GPSFilter) (p store.GPSPoint, found, ok bool) {
	m, known := t.memo.gps[imei]
	if !known || !m.latest.ok || len(f.Except) > 0 {
		return store.GPSPoint{}, false, false
	}
	l := m.latest
	at := l.at.Time.UnixMilli()
	switch {
	case at < milli(start).UnixMilli():
		return store.GPSPoint{}, false, true
	case at > milli(end).UnixMilli():
		return store.GPSPoint{}, false, false
	}
	if d := f.Holder; d != nil {
		if l.ownership != d.Ownership || d.Ownership == 0 && l.at.Time.Before(ceilMicro(d.CreatedAt)) {
			return store.GPSPoint{}, false, false
		}
	}
	return l.at, true, true
}

// gpsRowColumns are the columns of a sample's row, in gpsArgs' order.
const gpsRowColumns = `imei, sampled_at, ownership, lat, lon, alt, speed, accuracy, heading`

// gpsArgs are the values of gpsRowColumns for imei's sample p, recorded
// for ownership: the sample's time to the millisecond.
func gpsArgs(imei string, ownership int64, p store.GPSPoint) []any {
	return []any{imei, timeBound(milli(p.Time)), ownership, p.Lat, p.Lon, p.Alt, p.Speed, p.Accuracy, p.Heading}
}

// gpsWhere is the condition of the samples of imei from start to end that
// f keeps. Like the key of a sample, start and end count to the
// millisecond: a sample is in the range when its millisecond is from
// start's to end's.
func gpsWhere(imei string, start, end time.Time, f store.GPSFilter) *where {
	w := &where{}
	w.and("imei = " + w.arg(imei))
	w.and("sampled_at >= " + w.arg(timeBound(milli(start))))
	w.and("sampled_at <= " + w.arg(timeBound(milli(end))))
	if d := f.Holder; d != nil {
		// Device.HoldsGPS: a sample of the device's ownership; one from
		// before ownership numbers is of a device of none when recorded
		// since the device was added.
		w.and("ownership = " + w.arg(d.Ownership))
		if d.Ownership == 0 {
			w.and("sampled_at >= " + w.arg(timeBound(ceilMicro(d.CreatedAt))))
		}
	}
	if len(f.Except) > 0 {
		except := make([]pgtype.Timestamptz, len(f.Except))
		for i, p := range f.Except {
			except[i] = timeBound(milli(p.Time))
		}
		w.and("sampled_at <> ALL (" + w.arg(except) + ")")
	}
	return w
}

// Range implements store.GPSSampleRecords.
func (r gpsSamples) Range(imei string, start, end time.Time, f store.GPSFilter, limit int) ([]store.GPSPoint, error) {
	w := gpsWhere(imei, start, end, f)
	sql := `SELECT ` + gpsColumns + ` FROM gps_samples` + w.String() + ` ORDER BY sampled_at`
	if limit > 0 {
		sql += ` LIMIT ` + w.arg(limit)
	}
	return collect(r.t, scanFields(gpsFields), sql, w.args...)
}

// Latest implements store.GPSSampleRecords: the key range backwards, to
// the first sample f keeps.
func (r gpsSamples) Latest(imei string, start, end time.Time, f store.GPSFilter) (store.GPSPoint, bool, error) {
	if k, ok := r.t.latestBefore(imei, start, end, f); ok {
		return k.at, true, nil
	}
	if p, found, ok := r.t.latestKnown(imei, start, end, f); ok {
		return p, found, nil
	}
	w := gpsWhere(imei, start, end, f)
	var p store.GPSPoint
	err := r.t.pg.QueryRow(r.t.ctx, `SELECT `+gpsColumns+` FROM gps_samples`+w.String()+
		` ORDER BY sampled_at DESC LIMIT 1`, w.args...).Scan(gpsFields(&p)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.GPSPoint{}, false, nil
	}
	if err != nil {
		return store.GPSPoint{}, false, classify(err)
	}
	return p, true, nil
}

// gpsSeries is gps_samples as the retention purge walks it.
var gpsSeries = deviceSeries{table: "gps_samples", at: "sampled_at"}

// Purge implements store.GPSSampleRecords.
func (r gpsSamples) Purge(p store.SeriesPurge) (int, []byte, error) {
	r.t.memo.gps = nil
	return gpsSeries.purge(r.t, p)
}
