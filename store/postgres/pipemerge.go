package postgres

import (
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Queued inserts of one table, one statement for many jobs. A group commit
// of GPS messages queues one insert per message; sent as they were
// queued, each is a statement the server parses, plans and runs, and the
// per-statement work outweighs the few rows each writes. A queued insert
// that carries its rows (queuedStmt.rows) goes, with the inserts of the
// same kind queued right after it, as one statement of all their rows
// (mergeRows). The order of the transaction's statements is kept: only
// neighbours merge.
//
// Whose row a merged statement failed on, the server does not say. So a
// merged statement that fails is reported as a serialisation failure: the
// group commit runs its batch again, and splits it when it keeps failing
// (store.Committer), until the statement holds one job's rows, whose
// failure is that job's.

// mergedRows are the rows of one queued insert, as columns.
type mergedRows interface {
	// kind names the statement the rows merge into: rows of one kind
	// merge.
	kind() string
	// merge returns the statement that inserts the rows of all, which are
	// of its kind, and its arguments.
	merge(all []mergedRows) (string, []any)
}

// gpsRows are the samples of one queued GPS insert (insertGPSQueued).
type gpsRows struct {
	imei      string
	ownership int64
	at        []pgtype.Timestamptz
	cols      [][]float64 // lat, lon, alt, speed, accuracy, heading
}

func (g *gpsRows) kind() string { return "gps_samples" }

// insertGPSRows inserts the samples of several devices: each column as an
// array.
const insertGPSRows = `INSERT INTO gps_samples (` + gpsRowColumns + `)
	SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::bigint[], $4::float8[], $5::float8[], $6::float8[],
		$7::float8[], $8::float8[], $9::float8[])`

func (g *gpsRows) merge(all []mergedRows) (string, []any) {
	n := 0
	for _, r := range all {
		n += len(r.(*gpsRows).at)
	}
	imeis, owners, at := make([]string, 0, n), make([]int64, 0, n), make([]pgtype.Timestamptz, 0, n)
	cols := make([][]float64, 6)
	for c := range cols {
		cols[c] = make([]float64, 0, n)
	}
	for _, r := range all {
		g := r.(*gpsRows)
		for range g.at {
			imeis, owners = append(imeis, g.imei), append(owners, g.ownership)
		}
		at = append(at, g.at...)
		for c := range cols {
			cols[c] = append(cols[c], g.cols[c]...)
		}
	}
	return insertGPSRows, []any{imeis, at, owners, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5]}
}

// sentStmt is a statement send put in a round trip for queued ones: the
// first of them, and how many it stands for.
type sentStmt struct {
	queuedStmt
	merged int
}

// mergeQueued puts the queued statements into b, neighbouring inserts
// of one kind as one statement, and returns what each statement of b
// stands for.
func mergeQueued(b *pgx.Batch, queued []queuedStmt) []sentStmt {
	sent := make([]sentStmt, 0, len(queued))
	for i := 0; i < len(queued); {
		q := queued[i]
		j := i + 1
		if q.rows != nil {
			for j < len(queued) && queued[j].rows != nil && queued[j].rows.kind() == q.rows.kind() {
				j++
			}
		}
		if j-i == 1 {
			b.Queue(q.sql, q.args...)
		} else {
			all := make([]mergedRows, j-i)
			for k := range all {
				all[k] = queued[i+k].rows
			}
			sql, args := q.rows.merge(all)
			b.Queue(sql, args...)
		}
		sent = append(sent, sentStmt{queuedStmt: q, merged: j - i})
		i = j
	}
	return sent
}
