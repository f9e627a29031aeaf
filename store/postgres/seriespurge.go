package postgres

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// deviceSeries is a table of records kept by device and time to the
// millisecond, each stamped with the device's ownership it was recorded
// for (column ownership): what a batch of the retention purge of a device
// series (store.SeriesPurge) walks, device by device.
type deviceSeries struct {
	// table is the table's name.
	table string
	// at is its column of the record's time to the millisecond, which an
	// index orders after imei.
	at string
	// keep, when set, is the condition of the records the purge keeps
	// whatever their age (a device's open trip).
	keep string
}

// purgeScanRows bounds the rows of one device one statement of the purge
// reads.
const purgeScanRows = 1000

// purge runs the batch p: from the resume position, device by device in
// IMEI order (the next device is the least IMEI after the last, one probe
// of the index), it reads the records older than the device's latest
// cutoff, oldest first, asks p.Owners which are due and deletes those, at
// most p.Limit (a Limit of 0 or less deletes every due record at once).
// The resume position is the IMEI, a 0 byte and the unix millisecond
// (8 bytes, big-endian) of the first record the batch did not look at,
// nil when it reached the end.
//
// A cutoff is a time before which an organization's records go, so once a
// record of one ownership is not due none of that ownership's later ones
// is: the device's further reads leave that ownership out.
func (s deviceSeries) purge(t *tx, p store.SeriesPurge) (int, []byte, error) {
	imei, from, err := decodeSeriesPosition(p.From)
	if err != nil {
		return 0, nil, err
	}
	deleted := 0
	resumed := p.From != nil
	for {
		if !resumed {
			var next pgtype.Text
			if err := getOne(t, `SELECT min(imei) FROM `+s.table+` WHERE imei > $1`, []any{&next}, imei); err != nil {
				return 0, nil, err
			}
			if !next.Valid {
				return deleted, nil, nil
			}
			imei, from = next.String, pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
		}
		resumed = false
		oc, err := p.Owners(imei)
		if err != nil {
			return 0, nil, err
		}
		latest := oc.Latest()
		if latest.IsZero() {
			continue
		}
		kept := []int64{} // ownerships none of whose further records is due (not NULL: <> ALL (NULL) keeps nothing)
		for {
			sql := `SELECT ` + s.at + `, ownership FROM ` + s.table + ` WHERE imei = $1 AND ` + s.at + ` >= $2
				AND ` + s.at + ` < $3 AND ownership <> ALL ($4)`
			if s.keep != "" {
				sql += ` AND NOT (` + s.keep + `)`
			}
			rows, err := t.pg.Query(t.ctx, sql+` ORDER BY `+s.at+` LIMIT $5`,
				imei, from, timeBound(ceilMicro(latest)), kept, purgeScanRows)
			if err != nil {
				return 0, nil, classify(err)
			}
			var doomed []time.Time
			var at time.Time
			var ownership int64
			read, full := 0, false
			for rows.Next() {
				if err := rows.Scan(zeroTime{&at}, &ownership); err != nil {
					rows.Close()
					return 0, nil, classify(err)
				}
				if p.Limit > 0 && deleted+len(doomed) >= p.Limit {
					full = true
					break
				}
				read++
				switch {
				case slices.Contains(kept, ownership):
				case oc.Purgeable(ownership, at):
					doomed = append(doomed, at)
				default:
					kept = append(kept, ownership)
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return 0, nil, classify(err)
			}
			if len(doomed) > 0 {
				tag, err := t.exec(`DELETE FROM `+s.table+` WHERE imei = $1 AND `+s.at+` = ANY ($2)`, imei, doomed)
				if err != nil {
					return 0, nil, err
				}
				deleted += int(tag.RowsAffected())
			}
			if full {
				return deleted, encodeSeriesPosition(imei, at), nil
			}
			if read < purgeScanRows {
				break
			}
			from = pgtype.Timestamptz{Time: at.Add(time.Millisecond), Valid: true}
		}
	}
}

// encodeSeriesPosition is the resume position of the record of imei at at.
func encodeSeriesPosition(imei string, at time.Time) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(imei), 0), uint64(at.UnixMilli()))
}

// decodeSeriesPosition reads a resume position of encodeSeriesPosition:
// nil is the start, before every IMEI.
func decodeSeriesPosition(pos []byte) (string, pgtype.Timestamptz, error) {
	if pos == nil {
		return "", pgtype.Timestamptz{}, nil
	}
	sep := bytes.IndexByte(pos, 0)
	if sep < 0 || len(pos) != sep+9 {
		return "", pgtype.Timestamptz{}, fmt.Errorf("store: purge position %x: %w", pos, store.ErrInvalid)
	}
	at := time.UnixMilli(int64(binary.BigEndian.Uint64(pos[sep+1:])))
	return string(pos[:sep]), timeBound(at), nil
}
