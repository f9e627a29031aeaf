package postgres

import (
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Neighbouring writes of one kind, one statement for many jobs. A group
// commit of GPS messages queues one insert per message, and a connection
// storm's group commits a device_links upsert, a health state and an audit
// entry per connection and status report; sent as they were queued, each
// is a statement the server parses, plans and runs, and the per-statement
// work outweighs the row or few each writes. A queued write that says what
// its rows are (queuedStmt.merge) goes, with the writes of its kind in the
// same run of such writes, as one statement of all their rows (see
// mergeQueued for the order kept). Two upserts of one row never share a
// statement (the server refuses to change a row twice in one): a write
// whose key an earlier write of its statement has starts a new statement.
//
// Whose row a merged statement failed on, the server does not say. So a
// merged statement that fails is reported as a serialisation failure: the
// group commit runs its batch again, and splits it when it keeps failing
// (store.Committer), until the statement holds one job's rows, whose
// failure is that job's.

// mergeable is the rows of a queued write that may merge with its
// neighbours of the same kind.
type mergeable interface {
	// kind is the kind of the write: writes merge with their own kind.
	kind() *mergeKind
	// key names the row the write changes when another write of its kind
	// may change it too, and is "" when none may (an insert of new rows).
	key() string
}

// mergeKind is a kind of write that merges: args gives the arguments of
// sql, its statement for the rows of all, each of the kind.
type mergeKind struct {
	sql  string
	args func(all []mergeable) []any
}

// argsRow is a queued write of one row by its arguments, of a kind whose
// statement takes each argument as an array of the rows' (column); key is
// what mergeable.key says.
type argsRow struct {
	of   *mergeKind
	id   string
	args []any
}

func (r *argsRow) kind() *mergeKind { return r.of }
func (r *argsRow) key() string      { return r.id }

// column is argument col of each of all (argsRows), which is a T.
func column[T any](all []mergeable, col int) []T {
	out := make([]T, len(all))
	for i, m := range all {
		out[i] = m.(*argsRow).args[col].(T)
	}
	return out
}

// jsonColumn is argument col of each of all (argsRows), raw JSON as text
// or bytes, or nil for NULL, as the elements of a json or jsonb array.
func jsonColumn(all []mergeable, col int) []*string {
	out := make([]*string, len(all))
	for i, m := range all {
		var s string
		switch v := m.(*argsRow).args[col].(type) {
		case nil:
			continue
		case string:
			s = v
		case []byte:
			s = string(v)
		}
		out[i] = &s
	}
	return out
}

// gpsKind merges GPS inserts.
var gpsKind = &mergeKind{sql: insertGPSRows, args: func(all []mergeable) []any {
	rows := make([]*gpsRows, len(all))
	for i, m := range all {
		rows[i] = m.(*gpsRows)
	}
	return mergeGPS(rows)
}}

func (g *gpsRows) kind() *mergeKind { return gpsKind }
func (g *gpsRows) key() string      { return "" }

// insertGPSRows inserts the samples of several devices: each column as an
// array.
const insertGPSRows = `INSERT INTO gps_samples (` + gpsRowColumns + `)
	SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::bigint[], $4::float8[], $5::float8[], $6::float8[],
		$7::float8[], $8::float8[], $9::float8[])`

// mergeGPS returns the arguments of insertGPSRows for the rows of all.
func mergeGPS(all []*gpsRows) []any {
	n := 0
	for _, g := range all {
		n += len(g.at)
	}
	imeis, owners, at := make([]string, 0, n), make([]int64, 0, n), make([]pgtype.Timestamptz, 0, n)
	var cols [6][]float64
	for c := range cols {
		cols[c] = make([]float64, 0, n)
	}
	for _, g := range all {
		for range g.at {
			imeis, owners = append(imeis, g.imei), append(owners, g.ownership)
		}
		at = append(at, g.at...)
		for c := range cols {
			cols[c] = append(cols[c], g.cols[c]...)
		}
	}
	return []any{imeis, at, owners, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5]}
}

// sentStmt is a statement send put in a round trip for queued ones: the
// first of them, and how many it stands for.
type sentStmt struct {
	queuedStmt
	merged int
}

// mergeQueued puts the queued statements into b, the writes of each kind
// in a run of mergeable writes as few statements as their keys allow, and
// returns what each statement of b stands for.
//
// Within a run of neighbouring mergeable writes (one not mergeable ends
// it) the writes are put in statements by kind, the kinds in the order
// they first appear and each kind's writes in their own order. The kinds
// (GPS samples, device links and health states, audit entries, webhook
// messages, updates of device rows) change nothing for each other whatever
// their order: none reads what another writes, and the only references
// between them are to a device's or an organization's key, which an update
// of a device row leaves as it is. Each table sees its writes in the order
// they were made. A kind's writes go in one statement until a key
// repeats, which starts the next.
func mergeQueued(b *pgx.Batch, queued []queuedStmt) []sentStmt {
	sent := make([]sentStmt, 0, len(queued))
	put := func(group []queuedStmt) {
		q := group[0]
		if len(group) == 1 {
			b.Queue(q.sql, q.args...)
		} else {
			all := make([]mergeable, len(group))
			for k := range all {
				all[k] = group[k].merge
			}
			inKeyOrder(all)
			kind := q.merge.kind()
			b.Queue(kind.sql, kind.args(all)...)
		}
		sent = append(sent, sentStmt{queuedStmt: q, merged: len(group)})
	}
	for i := 0; i < len(queued); {
		if queued[i].merge == nil {
			put(queued[i : i+1])
			i++
			continue
		}
		j := i + 1
		for j < len(queued) && queued[j].merge != nil {
			j++
		}
		var kinds []*mergeKind
		byKind := map[*mergeKind][]queuedStmt{}
		for _, q := range queued[i:j] {
			k := q.merge.kind()
			if _, ok := byKind[k]; !ok {
				kinds = append(kinds, k)
			}
			byKind[k] = append(byKind[k], q)
		}
		for _, k := range kinds {
			for group := byKind[k]; len(group) > 0; {
				n := untilKeyRepeats(group)
				put(group[:n])
				group = group[n:]
			}
		}
		i = j
	}
	return sent
}

// inKeyOrder sorts all by key when each names the row it changes, so that
// every transaction that changes several rows of a kind locks them in one
// order: two that locked the same rows in opposite orders would wait for
// each other until the server's deadlock check (a second) aborted one.
// Writes that add new rows (no key) keep their order.
func inKeyOrder(all []mergeable) {
	for _, m := range all {
		if m.key() == "" {
			return
		}
	}
	slices.SortFunc(all, func(a, b mergeable) int { return strings.Compare(a.key(), b.key()) })
}

// untilKeyRepeats is how many of the writes of group, from its first,
// change no row twice.
func untilKeyRepeats(group []queuedStmt) int {
	keys := map[string]bool{}
	for n, q := range group {
		if k := q.merge.key(); k != "" {
			if keys[k] {
				return n
			}
			keys[k] = true
		}
	}
	return len(group)
}
