package postgres

import (
	"bytes"
	"encoding/binary"
	"strings"

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

// purgeByCutoffs runs one batch of a purge by organization cutoffs: sql,
// a DELETE returning the ids it deleted, gets the organizations ($1) with
// their cutoffs ($2), the id to resume at ($3), the latest cutoff ($4)
// and the batch size ($5). Without cutoffs nothing is due.
func purgeByCutoffs(t *tx, sql string, cut store.Cutoffs, from []byte, limit int) (int, []byte, error) {
	if len(cut) == 0 {
		return 0, nil, nil
	}
	orgs, cutoffs, latest := cutoffParams(cut)
	rows, err := t.pg.Query(t.ctx, sql, orgs, cutoffs, resumeID(from), latest, limitParam(limit))
	if err != nil {
		return 0, nil, classify(err)
	}
	return purged(rows, limit)
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

// jsonParam is a JSON document as a json parameter, its text as it is:
// NULL when there is none.
func jsonParam(raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

// jsonbParam is a JSON document as a jsonb parameter: NULL when there is
// none. jsonb cannot hold the character U+0000, which a JSON string can (a
// device's text, a receiver's answer): it is stored as U+FFFD rather than
// failing the write.
func jsonbParam(raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	return string(withoutNUL(raw))
}

// withoutNUL is the JSON text raw with each \u0000 escape replaced by
// \ufffd.
func withoutNUL(raw []byte) []byte {
	if !bytes.Contains(raw, []byte(`\u0000`)) {
		return raw
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 == len(raw) {
			out = append(out, raw[i])
			continue
		}
		if raw[i+1] == 'u' && bytes.HasPrefix(raw[i+2:], []byte("0000")) {
			out = append(out, `\ufffd`...)
			i += 5
			continue
		}
		// Any other escape, \\ among them, as it is.
		out = append(out, raw[i], raw[i+1])
		i++
	}
	return out
}

// textParam is s as a text parameter: PostgreSQL's text cannot hold the
// character U+0000 either, which a receiver's answer quoted in an error
// may have: it is stored as U+FFFD.
func textParam(s string) string { return strings.ReplaceAll(s, "\x00", "\uFFFD") }
