package postgres

import (
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// trips are the trips: table trips, by device and start to the
// millisecond (started_at_ms), the open trip of each device flagged by
// is_open under a partial unique index.
type trips struct{ t *tx }

// Trips implements store.TrackRecords.
func (t *tx) Trips() store.TripRecords { return trips{t} }

// tripColumns are the columns tripFields scans.
const tripColumns = `id, imei, organization_id, started_at, ended_at, driver_id, distance_meters, ownership`

// tripFields are the scan targets of tripColumns in t.
func tripFields(t *store.Trip) []any {
	return []any{&t.ID, &t.IMEI, &t.OrganizationID, zeroTime{&t.Start}, zeroTime{&t.End}, zeroID{&t.DriverID},
		&t.DistanceMeters, &t.Ownership}
}

// trip returns the one trip of sql; store.ErrNotFound when there is none.
func (r trips) trip(sql string, args ...any) (*store.Trip, error) {
	return getRecord(r.t, `SELECT `+tripColumns+` FROM trips WHERE `+sql, tripFields, args...)
}

// At implements store.TripRecords.
func (r trips) At(imei string, start time.Time) (*store.Trip, error) {
	t, err := r.trip(`imei = $1 AND started_at_ms = $2`, imei, timeBound(milli(start)))
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.NotFound("trip of %s starting at %s", imei, start.UTC().Format(time.RFC3339Nano))
	}
	return t, err
}

// Insert implements store.TripRecords: the id is the next of the column's
// identity. A second trip of the device at the same millisecond inserts
// nothing, which leaves the transaction usable.
func (r trips) Insert(t *store.Trip) error {
	err := r.t.pg.QueryRow(r.t.ctx, `INSERT INTO trips (`+tripRowColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (imei, started_at_ms) DO NOTHING
		RETURNING id`, tripArgs(t)...).Scan(&t.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Conflict("device %s has a trip starting at %s", t.IMEI, t.Start.UTC().Format(time.RFC3339Nano))
	}
	return classify(err)
}

// tripRowColumns are the columns of a trip's row but its id and open
// flag, in tripArgs' order.
const tripRowColumns = `imei, organization_id, ownership, started_at, ended_at, driver_id, distance_meters`

// tripArgs are the values of tripRowColumns for t.
func tripArgs(t *store.Trip) []any {
	return []any{t.IMEI, t.OrganizationID, t.Ownership, timeBound(t.Start), nullTime(t.End), nullID(t.DriverID),
		t.DistanceMeters}
}

// Put implements store.TripRecords. The id stays the one Insert gave, and
// the trip stays open or not.
func (r trips) Put(t *store.Trip) error {
	tag, err := r.t.exec(`UPDATE trips SET organization_id = $3, ownership = $4, started_at = $5, ended_at = $6,
			driver_id = $7, distance_meters = $8
		WHERE imei = $1 AND started_at_ms = $2`,
		t.IMEI, timeBound(milli(t.Start)), t.OrganizationID, t.Ownership, timeBound(t.Start), nullTime(t.End),
		nullID(t.DriverID), t.DistanceMeters)
	if err == nil && tag.RowsAffected() == 0 {
		return store.NotFound("trip %d", t.ID)
	}
	return err
}

// Open implements store.TripRecords.
func (r trips) Open(imei string) (*store.Trip, error) {
	t, err := r.trip(`imei = $1 AND is_open`, imei)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.NotFound("open trip of %s", imei)
	}
	return t, err
}

// SetOpen implements store.TripRecords: the device's open trip, if
// another, is cleared first, since the unique index of the open trips is
// checked row by row. A trip that is not stored is store.ErrNotFound, and
// changes nothing.
func (r trips) SetOpen(t *store.Trip) error {
	start := timeBound(milli(t.Start))
	if _, err := r.t.exec(`UPDATE trips SET is_open = false WHERE imei = $1 AND is_open AND started_at_ms <> $2
			AND EXISTS (SELECT FROM trips WHERE imei = $1 AND started_at_ms = $2)`, t.IMEI, start); err != nil {
		return err
	}
	tag, err := r.t.exec(`UPDATE trips SET is_open = true WHERE imei = $1 AND started_at_ms = $2`, t.IMEI, start)
	if err == nil && tag.RowsAffected() == 0 {
		return store.NotFound("trip of %s starting at %s", t.IMEI, t.Start.UTC().Format(time.RFC3339Nano))
	}
	return err
}

// ClearOpen implements store.TripRecords.
func (r trips) ClearOpen(imei string) error {
	_, err := r.t.exec(`UPDATE trips SET is_open = false WHERE imei = $1 AND is_open`, imei)
	return err
}

// ByDevice implements store.TripRecords.
func (r trips) ByDevice(imei string, start, end time.Time) ([]store.Trip, error) {
	var w where
	w.and("imei = " + w.arg(imei))
	if !end.IsZero() {
		w.and("started_at <= " + w.arg(timeBound(floorMicro(end))))
	}
	if !start.IsZero() {
		w.and("(ended_at IS NULL OR ended_at >= " + w.arg(timeBound(ceilMicro(start))) + ")")
	}
	return collect(r.t, scanFields(tripFields), `SELECT `+tripColumns+` FROM trips`+w.String()+` ORDER BY started_at_ms`,
		w.args...)
}

// IMEIs implements store.TripRecords: a skip scan of the index on (imei,
// started_at_ms), one probe per device rather than a read of every trip.
func (r trips) IMEIs() ([]string, error) {
	return collect(r.t, pgx.RowTo[string], `WITH RECURSIVE device (imei) AS (
			SELECT min(imei) FROM trips
			UNION ALL
			SELECT (SELECT min(imei) FROM trips WHERE imei > device.imei) FROM device WHERE device.imei IS NOT NULL)
		SELECT imei FROM device WHERE imei IS NOT NULL`)
}

// tripSeries is trips as the retention purge walks it: a device's open
// trip stays.
var tripSeries = deviceSeries{table: "trips", at: "started_at_ms", keep: "is_open"}

// Purge implements store.TripRecords.
func (r trips) Purge(p store.SeriesPurge) (int, []byte, error) {
	return tripSeries.purge(r.t, p)
}
