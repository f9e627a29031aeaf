package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// The retention purge of driver sessions walks the devices in IMEI order
// from where the last batch stopped, a few at a time: it asks the store for
// the cutoffs of each, reads the ended sessions of those devices that
// started before their latest cutoff, keeps those the store says are due,
// and deletes them in one statement. The open session of a device has no
// end and is never read.

// sessionPurgeDevices is how many devices one step of the walk reads.
const sessionPurgeDevices = 100

// sessionPurgeRows is how many candidate sessions one query reads at least.
const sessionPurgeRows = 500

// sessionPosition is where a purge of sessions resumes: after the session
// of IMEI that started at After.
type sessionPosition struct {
	IMEI  string    `json:"imei"`
	After time.Time `json:"after"`
}

// Purge implements store.DriverSessionSet.
func (s driverSessions) Purge(p store.SeriesPurge) (int, []byte, error) {
	s.t.memo.sessions = nil
	limit := p.Limit // 0 or less: no bound
	var pos sessionPosition
	if p.From != nil {
		if err := json.Unmarshal(p.From, &pos); err != nil {
			return 0, nil, fmt.Errorf("store: postgres: driver session purge position %q: %w", p.From, err)
		}
	}
	owners := map[string]*store.OwnerCutoffs{}
	var doomed struct {
		imeis  []string
		starts []time.Time
	}
	var resume []byte
	inclusive := true // whether the device at pos is still to walk
walk:
	for {
		devices, err := s.devicesFrom(pos.IMEI, inclusive)
		if err != nil {
			return 0, nil, err
		}
		if len(devices) == 0 {
			break
		}
		var imeis []string
		var latest []time.Time
		for _, imei := range devices {
			oc, err := p.Owners(imei)
			if err != nil {
				return 0, nil, err
			}
			owners[imei] = oc
			if l := oc.Latest(); !l.IsZero() {
				imeis, latest = append(imeis, imei), append(latest, l.UTC())
			}
		}
		from := sessionKey{imei: pos.IMEI, start: pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}}
		if !pos.After.IsZero() && devices[0] == pos.IMEI {
			from.start = pgtype.Timestamptz{Time: pos.After.UTC(), Valid: true}
		}
		for len(imeis) > 0 {
			chunk := sessionPurgeRows
			if limit > 0 {
				chunk = max(limit, sessionPurgeRows)
			}
			candidates, err := s.purgeCandidates(imeis, latest, from, chunk)
			if err != nil {
				return 0, nil, err
			}
			for _, c := range candidates {
				if !owners[c.imei].Purgeable(c.ownership, c.start.Time) {
					continue
				}
				doomed.imeis, doomed.starts = append(doomed.imeis, c.imei), append(doomed.starts, c.start.Time)
				if limit > 0 && len(doomed.imeis) == limit {
					if resume, err = json.Marshal(sessionPosition{IMEI: c.imei, After: c.start.Time}); err != nil {
						return 0, nil, err
					}
					break walk
				}
			}
			if len(candidates) < chunk {
				break
			}
			from = candidates[len(candidates)-1].sessionKey
		}
		pos, inclusive = sessionPosition{IMEI: devices[len(devices)-1]}, false
	}
	if len(doomed.imeis) == 0 {
		return 0, resume, nil
	}
	_, err := s.t.exec(`DELETE FROM driver_sessions s USING unnest($1::text[], $2::timestamptz[]) AS d(imei, started_at)
		WHERE s.imei = d.imei AND s.started_at = d.started_at`, doomed.imeis, doomed.starts)
	if err != nil {
		return 0, nil, err
	}
	return len(doomed.imeis), resume, nil
}

// devicesFrom returns the next devices with sessions in IMEI order, from
// imei on (inclusive) or after it, skipping from one device to the next
// along the primary key.
func (s driverSessions) devicesFrom(imei string, inclusive bool) ([]string, error) {
	op := ">"
	if inclusive {
		op = ">="
	}
	return collect(s.t, pgx.RowTo[string], `WITH RECURSIVE d(imei) AS (
			(SELECT imei FROM driver_sessions WHERE imei `+op+` $1 ORDER BY imei LIMIT 1)
			UNION ALL
			SELECT (SELECT s.imei FROM driver_sessions s WHERE s.imei > d.imei ORDER BY s.imei LIMIT 1)
			FROM d WHERE d.imei IS NOT NULL)
		SELECT imei FROM d WHERE imei IS NOT NULL LIMIT $2`, imei, sessionPurgeDevices)
}

// sessionKey is the key of a session; the start may be -infinity (before
// every session of the device).
type sessionKey struct {
	imei  string
	start pgtype.Timestamptz
}

// purgeCandidate is an ended session that may be due, with its ownership.
type purgeCandidate struct {
	sessionKey
	ownership int64
}

// purgeCandidates returns the first n ended sessions after from of the
// devices imeis that started before the device's latest cutoff, by device
// and start.
func (s driverSessions) purgeCandidates(imeis []string, latest []time.Time, from sessionKey, n int) ([]purgeCandidate, error) {
	return collect(s.t, func(row pgx.CollectableRow) (purgeCandidate, error) {
		var c purgeCandidate
		err := row.Scan(&c.imei, &c.start, &c.ownership)
		c.start.Time = c.start.Time.UTC()
		return c, err
	}, `SELECT s.imei, s.started_at, s.ownership
		FROM unnest($1::text[], $2::timestamptz[]) AS d(imei, latest)
		JOIN driver_sessions s ON s.imei = d.imei AND s.started_at < d.latest
		WHERE s.ended_at IS NOT NULL AND (s.imei, s.started_at) > ($3, $4)
		ORDER BY s.imei, s.started_at LIMIT $5`, imeis, latest, from.imei, from.start, n)
}
