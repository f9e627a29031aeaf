package postgres

import (
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// gpsSamples are the GPS samples: table gps_samples, partitioned by month,
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

// Insert implements store.GPSSampleRecords: one statement, which stores
// nothing when the device has a sample at that millisecond.
func (r gpsSamples) Insert(imei string, ownership int64, p store.GPSPoint) (bool, error) {
	tag, err := r.t.exec(`INSERT INTO gps_samples (`+gpsRowColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (imei, sampled_at) DO NOTHING`, gpsArgs(imei, ownership, p)...)
	return err == nil && tag.RowsAffected() == 1, err
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
