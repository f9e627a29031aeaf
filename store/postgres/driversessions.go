package postgres

import (
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// Driver sessions are rows of driver_sessions keyed by device and start,
// the start kept to the millisecond (a check-in at the same millisecond
// replaces the session); the device's open session is its row without an
// end, of which a unique partial index allows one. The wrong PINs of a
// device are one row of driver_pin_failures holding their times.

// driverSessions is the driver session set of one transaction.
type driverSessions struct{ t *tx }

// DriverSessions implements store.DriverRecords.
func (t *tx) DriverSessions() store.DriverSessionSet { return driverSessions{t} }

// sessionColumns are the columns scanSession reads, in its order.
const sessionColumns = `imei, organization_id, driver_id, started_at, ended_at, method, ended_by, event_id, ownership`

// scanSession reads one row of sessionColumns.
func scanSession(row pgx.Row) (*store.DriverSession, error) {
	var s store.DriverSession
	var end pgtype.Timestamptz
	if err := row.Scan(&s.IMEI, &s.OrganizationID, &s.DriverID, &s.Start, &end, &s.Method, &s.EndedBy,
		&s.EventID, &s.Ownership); err != nil {
		return nil, err
	}
	s.Start, s.End = s.Start.UTC(), timeOf(end)
	return &s, nil
}

// sessionStart is the start a session is kept under: to the millisecond.
func sessionStart(t time.Time) time.Time { return t.Truncate(time.Millisecond).UTC() }

// one reads the session query answers, or nil when there is none.
func (s driverSessions) one(query string, args ...any) (*store.DriverSession, error) {
	ds, err := scanSession(s.t.pg.QueryRow(s.t.ctx, query, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return ds, classify(err)
}

// list reads the sessions query answers.
func (s driverSessions) list(query string, args ...any) ([]store.DriverSession, error) {
	return collect(s.t, scanValue(scanSession), query, args...)
}

// prefetchSessions reads the latest started driver session of each device of $1.
const prefetchSessions = `SELECT DISTINCT ON (imei) ` + sessionColumns + ` FROM driver_sessions
	WHERE imei = ANY($1) ORDER BY imei, started_at DESC`

// readSessionsAhead keeps the sessions prefetchSessions answers for the
// devices want: nil for a device that never had one.
func (t *tx) readSessionsAhead(br pgx.BatchResults, want []string) error {
	rows, err := br.Query()
	if err != nil {
		return classify(err)
	}
	ss, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.DriverSession, error) { return scanSession(row) })
	if err != nil {
		return classify(err)
	}
	if t.memo.sessions == nil {
		t.memo.sessions = map[string]*store.DriverSession{}
	}
	for _, imei := range want {
		t.memo.sessions[imei] = nil
	}
	for _, s := range ss {
		t.memo.sessions[s.IMEI] = s
	}
	return nil
}

// Current implements store.DriverSessionSet.
func (s driverSessions) Current(imei string) (*store.DriverSession, error) {
	return s.one(`SELECT `+sessionColumns+` FROM driver_sessions WHERE imei = $1 AND ended_at IS NULL`, imei)
}

// Begin implements store.DriverSessionSet. A session that is open already
// breaks driver_sessions_open: ErrConflict.
func (s driverSessions) Begin(ds *store.DriverSession) error {
	delete(s.t.memo.sessions, ds.IMEI)
	_, err := s.t.exec(`INSERT INTO driver_sessions (`+sessionColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (imei, started_at) DO UPDATE SET organization_id = EXCLUDED.organization_id,
			driver_id = EXCLUDED.driver_id, ended_at = EXCLUDED.ended_at, method = EXCLUDED.method,
			ended_by = EXCLUDED.ended_by, event_id = EXCLUDED.event_id, ownership = EXCLUDED.ownership`,
		sessionArgs(ds)...)
	return err
}

// sessionArgs are the values of sessionColumns for ds: its start to the
// millisecond.
func sessionArgs(ds *store.DriverSession) []any {
	return []any{ds.IMEI, ds.OrganizationID, ds.DriverID, sessionStart(ds.Start), nullTime(ds.End), ds.Method,
		ds.EndedBy, ds.EventID, ds.Ownership}
}

// End implements store.DriverSessionSet: the open row takes the fields of
// ds, its start staying its key.
func (s driverSessions) End(ds *store.DriverSession) error {
	delete(s.t.memo.sessions, ds.IMEI)
	if ds.End.IsZero() {
		return fmt.Errorf("store: postgres: the session of device %s cannot end without an end time", ds.IMEI)
	}
	tag, err := s.t.exec(`UPDATE driver_sessions SET organization_id = $2, driver_id = $3, ended_at = $4,
		method = $5, ended_by = $6, event_id = $7, ownership = $8 WHERE imei = $1 AND ended_at IS NULL`,
		ds.IMEI, ds.OrganizationID, ds.DriverID, ds.End.UTC(), ds.Method, ds.EndedBy, ds.EventID, ds.Ownership)
	return affected(tag, err, "open driver session on device %s", ds.IMEI)
}

// AllCurrent implements store.DriverSessionSet.
func (s driverSessions) AllCurrent() ([]store.DriverSession, error) {
	return s.list(`SELECT ` + sessionColumns + ` FROM driver_sessions WHERE ended_at IS NULL ORDER BY imei`)
}

// LastStarted implements store.DriverSessionSet. A group commit reads each
// device's latest session ahead, which answers for any time after its start.
func (s driverSessions) LastStarted(imei string, at time.Time) (*store.DriverSession, error) {
	if b := s.t.bulk; b != nil {
		return b.lastStarted(imei, at)
	}
	bound := sessionStart(at).Add(time.Millisecond)
	if latest, ok := s.t.memo.sessions[imei]; ok && (latest == nil || latest.Start.Before(bound)) {
		if latest == nil {
			return nil, nil
		}
		c := *latest
		return &c, nil
	}
	return s.one(`SELECT `+sessionColumns+` FROM driver_sessions WHERE imei = $1 AND started_at < $2
		ORDER BY started_at DESC LIMIT 1`, imei, bound)
}

// StartedBy implements store.DriverSessionSet.
func (s driverSessions) StartedBy(imei string, until time.Time) ([]store.DriverSession, error) {
	return s.list(`SELECT `+sessionColumns+` FROM driver_sessions WHERE imei = $1 AND started_at <= $2
		ORDER BY started_at`, imei, until.UTC())
}

// driverPinFailures is the wrong-PIN set of one transaction.
type driverPinFailures struct{ t *tx }

// DriverPinFailures implements store.DriverRecords.
func (t *tx) DriverPinFailures() store.DriverPinFailureSet { return driverPinFailures{t} }

// Get implements store.DriverPinFailureSet.
func (s driverPinFailures) Get(imei string) ([]time.Time, error) {
	var times []time.Time
	err := s.t.pg.QueryRow(s.t.ctx, `SELECT failed_at FROM driver_pin_failures WHERE imei = $1`, imei).Scan(&times)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	for i := range times {
		times[i] = times[i].UTC()
	}
	return times, classify(err)
}

// Put implements store.DriverPinFailureSet. No times is no row.
func (s driverPinFailures) Put(imei string, times []time.Time) error {
	if len(times) == 0 {
		return s.Delete(imei)
	}
	utc := make([]time.Time, len(times))
	for i, t := range times {
		utc[i] = t.UTC()
	}
	_, err := s.t.exec(`INSERT INTO driver_pin_failures (imei, failed_at) VALUES ($1, $2)
		ON CONFLICT (imei) DO UPDATE SET failed_at = EXCLUDED.failed_at`, imei, utc)
	return err
}

// Delete implements store.DriverPinFailureSet.
func (s driverPinFailures) Delete(imei string) error {
	_, err := s.t.exec(`DELETE FROM driver_pin_failures WHERE imei = $1`, imei)
	return err
}
