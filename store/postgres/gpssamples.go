package postgres

import (
	"errors"
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
// statement.
func (r gpsSamples) Insert(imei string, ownership int64, points []store.GPSPoint) ([]bool, error) {
	if b := r.t.bulk; b != nil {
		return b.insertGPS(imei, ownership, points)
	}
	n := len(points)
	at := make([]pgtype.Timestamptz, n)
	cols := make([][]float64, 6)
	for c := range cols {
		cols[c] = make([]float64, n)
	}
	for i, p := range points {
		at[i] = timeBound(milli(p.Time))
		cols[0][i], cols[1][i], cols[2][i], cols[3][i], cols[4][i], cols[5][i] = p.Lat, p.Lon, p.Alt, p.Speed, p.Accuracy, p.Heading
	}
	rows, err := r.t.pg.Query(r.t.ctx, insertGPS, imei, ownership, at, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5])
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
	stored := make([]bool, n)
	for i, p := range points {
		ms := milli(p.Time).UnixMilli()
		if fresh[ms] {
			stored[i], fresh[ms] = true, false
		}
	}
	return stored, nil
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
	rows, err := r.t.pg.Query(r.t.ctx, sql, w.args...)
	if err != nil {
		return nil, classify(err)
	}
	var out []store.GPSPoint
	for rows.Next() {
		var p store.GPSPoint
		if err := rows.Scan(gpsFields(&p)...); err != nil {
			rows.Close()
			return nil, classify(err)
		}
		out = append(out, p)
	}
	return out, classify(rows.Err())
}

// Latest implements store.GPSSampleRecords: the key range backwards, to
// the first sample f keeps.
func (r gpsSamples) Latest(imei string, start, end time.Time, f store.GPSFilter) (store.GPSPoint, bool, error) {
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
	return gpsSeries.purge(r.t, p)
}
