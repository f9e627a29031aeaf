package postgres

import (
	"errors"
	"iter"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// How the database keeps each kind of record a copy moves (store.Kinds):
// its tables, how its records are read out, and how they are stored again
// with their identities: by COPY in batches for the kinds that grow with
// the fleet's history (events, GPS samples, trips, the audit log…), one
// at a time through the engine's own writers for the rest. Both read and
// write each table's columns through the engine's own column lists,
// scanners and argument lists.

// copyKind is the database's side of one kind of record.
type copyKind struct {
	// tables are the kind's tables: the first has one row per record,
	// which count counts unless the kind has a statement of its own.
	tables []string
	count  string
	// dump yields every record, in key order, until yield returns false.
	dump func(t *tx, yield func(any) bool) error
	// put stores every record recs yields.
	put func(t *tx, k store.Kind, recs iter.Seq2[any, error]) (int64, error)
}

// putFunc stores the records of a kind.
type putFunc func(t *tx, k store.Kind, recs iter.Seq2[any, error]) (int64, error)

// copyBatch is how many records one COPY of a batch writes.
const copyBatch = 5000

// keysPerQuery is how many keys one query of byKey reads.
const keysPerQuery = 1000

// kindOf is the copyKind of records of type T.
func kindOf[T any](tables []string, dump func(t *tx, yield func(*T) bool) error, put putFunc) copyKind {
	return copyKind{tables: tables, put: put,
		dump: func(t *tx, yield func(any) bool) error { return dump(t, func(r *T) bool { return yield(r) }) }}
}

// withCount is k counted by the statement count: for a kind whose record
// is several rows of its table.
func withCount(count string, k copyKind) copyKind {
	k.count = count
	return k
}

// tableList lists table names.
func tableList(names ...string) []string { return names }

// each stores records one at a time with put.
func each[T any](put func(t *tx, r *T) error) putFunc {
	return func(t *tx, k store.Kind, recs iter.Seq2[any, error]) (int64, error) {
		return store.Each(k, recs, func(r *T) error { return put(t, r) })
	}
}

// batched stores records copyBatch at a time with put.
func batched[T any](put func(t *tx, batch []*T) error) putFunc {
	return func(t *tx, k store.Kind, recs iter.Seq2[any, error]) (int64, error) {
		return store.Batches(k, recs, copyBatch, func(b []*T) error { return put(t, b) })
	}
}

// copied stores records by COPY into table's columns, each record's row
// from row.
func copied[T any](table, columns string, row func(r *T) ([]any, error)) putFunc {
	return batched(func(t *tx, batch []*T) error { return copyRows(t, table, columns, batch, row) })
}

// rows is a row function that cannot fail.
func rows[T any](row func(r *T) []any) func(r *T) ([]any, error) {
	return func(r *T) ([]any, error) { return row(r), nil }
}

// selected dumps the rows sql selects, in its order, each scanned by scan.
func selected[T any](sql string, scan func(row pgx.Row) (*T, error)) func(t *tx, yield func(*T) bool) error {
	return func(t *tx, yield func(*T) bool) error {
		rs, err := t.pg.Query(t.ctx, sql)
		if err != nil {
			return classify(err)
		}
		defer rs.Close()
		for rs.Next() {
			r, err := scan(rs)
			if err != nil {
				return classify(err)
			}
			if !yield(r) {
				return nil
			}
		}
		return classify(rs.Err())
	}
}

// scanned is the scan of selected for the fields fields gives.
func scanned[T any](fields func(r *T) []any) func(row pgx.Row) (*T, error) {
	return func(row pgx.Row) (*T, error) {
		r := new(T)
		return r, row.Scan(fields(r)...)
	}
}

// listed dumps the records list reads, in its order: for the kinds of few
// records.
func listed[T any](list func(t *tx) ([]T, error)) func(t *tx, yield func(*T) bool) error {
	return func(t *tx, yield func(*T) bool) error {
		records, err := list(t)
		for i := 0; err == nil && i < len(records) && yield(&records[i]); i++ {
		}
		return err
	}
}

// byKey dumps one record per key that keys selects ($1: the key after
// which, $2: how many), each read by get, the engine's reader of one
// record: for the kinds of one record per device or organization.
func byKey[K any, T any](keys string, get func(t *tx, key K) (*T, error)) func(t *tx, yield func(*T) bool) error {
	return func(t *tx, yield func(*T) bool) error {
		var after K
		for {
			page, err := collect(t, pgx.RowTo[K], keys, after, keysPerQuery)
			if err != nil {
				return err
			}
			for _, key := range page {
				r, err := get(t, key)
				if err != nil {
					return err
				}
				if !yield(r) {
					return nil
				}
			}
			if len(page) < keysPerQuery {
				return nil
			}
			after = page[len(page)-1]
		}
	}
}

// errStop ends a walk whose consumer wants no more.
var errStop = errors.New("store: stop")

// copyKinds is the database's side of every kind of store.Kinds; the
// records' own tables are in copykinds_*.go.
var copyKinds = map[store.Kind]copyKind{}

// register adds the kinds of one record group to copyKinds.
func register(kinds map[store.Kind]copyKind) bool {
	for k, ck := range kinds {
		copyKinds[k] = ck
	}
	return true
}

// copySequence is the identity column behind a store.Sequence.
type copySequence struct{ table, column string }

// copySequences are the identities of the store.Sequences.
var copySequences = map[store.Sequence]copySequence{
	store.SeqPartners:             {"partners", "id"},
	store.SeqOrganizations:        {"organizations", "id"},
	store.SeqUsers:                {"users", "id"},
	store.SeqGroups:               {"groups", "id"},
	store.SeqOwnerships:           {"device_ownerships", "ownership"},
	store.SeqEvents:               {"events", "id"},
	store.SeqEventComments:        {"event_comments", "id"},
	store.SeqTrips:                {"trips", "id"},
	store.SeqDrivers:              {"drivers", "id"},
	store.SeqDriverAssignments:    {"driver_assignments", "id"},
	store.SeqAlarms:               {"alarms", "id"},
	store.SeqAlarmNotes:           {"alarm_notes", "id"},
	store.SeqAlarmRecipients:      {"alarm_recipients", "id"},
	store.SeqQueuedCommands:       {"queued_commands", "seq"},
	store.SeqAuditEntries:         {"audit_log", "id"},
	store.SeqMessages:             {"messages", "seq"},
	store.SeqDeliveries:           {"webhook_deliveries", "id"},
	store.SeqWebhookSubscriptions: {"webhook_subscriptions", "id"},
}
