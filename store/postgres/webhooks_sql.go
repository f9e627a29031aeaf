package postgres

import (
	"encoding/binary"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// What the webhook records add to the helpers every group shares (sql.go,
// tracks_sql.go): the retention cutoffs as parameters, the resume
// positions of the batched purges, and JSON documents as parameters.

// cutoffParams are the retention cutoffs as two parameters of the same
// length, an organization's id and its cutoff at the same index, for
// "unnest($1::bigint[], $2::timestamptz[]) AS c(organization_id, cutoff)",
// and the latest of them. A cutoff is rounded up to the microsecond, so
// that "stored < cutoff" compares as with the Go time (sql.go).
func cutoffParams(cut store.Cutoffs) (orgs []int64, cutoffs []pgtype.Timestamptz, latest pgtype.Timestamptz) {
	for org, t := range cut {
		orgs = append(orgs, org)
		cutoffs = append(cutoffs, timeBound(ceilMicro(t)))
	}
	return orgs, cutoffs, timeBound(ceilMicro(cut.Latest()))
}

// resumeID is the id a batched purge resumes at, from the position it
// returned: 0 (the start) for nil or a position it did not write.
func resumeID(from []byte) int64 {
	if len(from) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(from))
}

// resumeAt is the position of a purge that resumes at id.
func resumeAt(id int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(id)) }

// purged reads the ids a batch of a purge deleted (rows of one bigint) and
// returns how many it deleted and where the next batch resumes: after the
// highest of them when the batch is full, nil when it is not, which means
// the walk found nothing more to delete.
func purged(rows pgx.Rows, limit int) (int, []byte, error) {
	defer rows.Close()
	n, last := 0, int64(0)
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return 0, nil, classify(err)
		}
		n, last = n+1, max(last, id)
	}
	if err := rows.Err(); err != nil {
		return 0, nil, classify(err)
	}
	if limit > 0 && n >= limit {
		return n, resumeAt(last + 1), nil
	}
	return n, nil, nil
}

// limitParam is a batch limit as a LIMIT parameter: NULL (no limit) for 0
// or less.
func limitParam(limit int) pgtype.Int8 {
	return pgtype.Int8{Int64: int64(limit), Valid: limit > 0}
}

// jsonParam is a JSON document as a json or jsonb parameter: NULL when
// there is none.
func jsonParam(raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}
