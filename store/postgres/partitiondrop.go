package postgres

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// The retention purge's whole-partition steps (store/partitionpurge.go):
// the GPS samples and the events name their partitions and what is in
// them, and drop a partition at once. The store decides which may go.

var (
	_ store.GPSPartitions   = gpsSamples{}
	_ store.EventPartitions = events{}
)

// partitionName matches the name of a day or month partition of a table
// (partitions.go) and captures its year, month and day.
var partitionName = regexp.MustCompile(`_y([0-9]{4})m([0-9]{2})(?:d([0-9]{2}))?$`)

// timePartitions returns the day and month partitions of table that end at
// or before before, oldest first. Their names say their ranges: every one
// is made by fleetcam_ensure_partition.
func timePartitions(t *tx, table string, before time.Time) ([]store.SeriesPartition, error) {
	names, err := collect(t, pgx.RowTo[string], `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = $1::regclass`, table)
	if err != nil {
		return nil, err
	}
	var out []store.SeriesPartition
	for _, name := range names {
		m := partitionName.FindStringSubmatch(name)
		if m == nil || name != table+m[0] {
			continue // the default partition
		}
		y, _ := strconv.Atoi(m[1])
		mo, _ := strconv.Atoi(m[2])
		unit, d := month, 1
		if m[3] != "" {
			unit = day
			d, _ = strconv.Atoi(m[3])
		}
		start := time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC)
		p := store.SeriesPartition{Name: name, Start: start, End: unit.add(start, 1)}
		if !p.End.After(before) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b store.SeriesPartition) int { return a.Start.Compare(b.Start) })
	return out, nil
}

// partitionIdent is p's name as an SQL identifier, after checking that it
// is a partition of table: the name reaches SQL as text.
func partitionIdent(table string, p store.SeriesPartition) (string, error) {
	m := partitionName.FindStringSubmatch(p.Name)
	if m == nil || p.Name != table+m[0] {
		return "", fmt.Errorf("store: postgres: %q is no partition of %s", p.Name, table)
	}
	return pgx.Identifier{p.Name}.Sanitize(), nil
}

// dropPartition counts the rows of table's partition p and drops it; a
// partition others' foreign keys refer to is detached first, which checks
// that none of theirs refers to its rows.
func dropPartition(t *tx, table string, p store.SeriesPartition, detach bool) (int, error) {
	ident, err := partitionIdent(table, p)
	if err != nil {
		return 0, err
	}
	var n int
	if err := getOne(t, `SELECT count(*) FROM `+ident, []any{&n}); err != nil {
		return 0, err
	}
	if detach {
		if _, err := t.exec(`ALTER TABLE ` + pgx.Identifier{table}.Sanitize() + ` DETACH PARTITION ` + ident); err != nil {
			return 0, err
		}
	}
	if _, err := t.exec(`DROP TABLE ` + ident); err != nil {
		return 0, err
	}
	return n, nil
}

// distinct returns the values of column in table's partition p, in order:
// the least value after the last, one probe of an index that leads with
// the column each (the primary key of gps_samples, events_organization).
func distinct[T any](t *tx, table string, p store.SeriesPartition, column string) ([]T, error) {
	ident, err := partitionIdent(table, p)
	if err != nil {
		return nil, err
	}
	col := pgx.Identifier{column}.Sanitize()
	return collect(t, pgx.RowTo[T], `WITH RECURSIVE d (v) AS (
			SELECT min(`+col+`) FROM `+ident+`
			UNION ALL
			SELECT (SELECT min(`+col+`) FROM `+ident+` WHERE `+col+` > d.v) FROM d WHERE d.v IS NOT NULL)
		SELECT v FROM d WHERE v IS NOT NULL`)
}

// Partitions implements store.GPSPartitions.
func (s gpsSamples) Partitions(before time.Time) ([]store.SeriesPartition, error) {
	return timePartitions(s.t, "gps_samples", before)
}

// IMEIs implements store.GPSPartitions.
func (s gpsSamples) IMEIs(p store.SeriesPartition) ([]string, error) {
	return distinct[string](s.t, "gps_samples", p, "imei")
}

// HasOthers implements store.GPSPartitions over the device's samples in
// the partition.
func (s gpsSamples) HasOthers(p store.SeriesPartition, imei string, ownerships []int64) (bool, error) {
	ident, err := partitionIdent("gps_samples", p)
	if err != nil {
		return false, err
	}
	if ownerships == nil {
		ownerships = []int64{} // <> ALL (NULL) would keep nothing
	}
	var others bool
	err = getOne(s.t, `SELECT EXISTS (SELECT FROM `+ident+` WHERE imei = $1 AND ownership <> ALL ($2))`,
		[]any{&others}, imei, ownerships)
	return others, err
}

// Drop implements store.GPSPartitions.
func (s gpsSamples) Drop(p store.SeriesPartition) (int, error) {
	return dropPartition(s.t, "gps_samples", p, false)
}

// Partitions implements store.EventPartitions.
func (s events) Partitions(before time.Time) ([]store.SeriesPartition, error) {
	return timePartitions(s.t, "events", before)
}

// Organizations implements store.EventPartitions.
func (s events) Organizations(p store.SeriesPartition) ([]int64, error) {
	return distinct[int64](s.t, "events", p, "organization_id")
}

// WithFiles implements store.EventPartitions.
func (s events) WithFiles(p store.SeriesPartition, limit int) ([]store.Event, error) {
	if _, err := partitionIdent("events", p); err != nil {
		return nil, err
	}
	return s.list(`SELECT `+eventColumns+` FROM events e WHERE e.time >= $1 AND e.time < $2
		AND EXISTS (SELECT FROM event_files f WHERE f.event_id = e.id AND f.event_time = e.time)
		ORDER BY e.time, e.id LIMIT $3`, p.Start, p.End, limit)
}

// Drop implements store.EventPartitions: the comments of the partition's
// events go first, then the partition of their files of the same range
// (empty: the store released every event's files), then the partition,
// and with it the hourly and daily counts of its range (eventcounts.go):
// every event of those hours and days is in the partition, since a range
// with a partition has none in the default partition.
func (s events) Drop(p store.SeriesPartition) (int, error) {
	if _, err := partitionIdent("events", p); err != nil {
		return 0, err
	}
	if _, err := s.t.exec(`DELETE FROM event_comments WHERE event_time >= $1 AND event_time < $2`, p.Start, p.End); err != nil {
		return 0, err
	}
	if err := s.t.queue(dropEventCountsSQL, p.Start, p.End); err != nil {
		return 0, err
	}
	files := store.SeriesPartition{Name: "event_files" + p.Name[len("events"):], Start: p.Start, End: p.End}
	var exists bool
	if err := getOne(s.t, `SELECT to_regclass($1) IS NOT NULL`, []any{&exists}, files.Name); err != nil {
		return 0, err
	}
	if exists {
		if _, err := dropPartition(s.t, "event_files", files, false); err != nil {
			return 0, err
		}
	}
	return dropPartition(s.t, "events", p, true)
}
