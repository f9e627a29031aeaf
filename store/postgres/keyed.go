package postgres

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fleetcam/fleetcam/store"
)

// The simple keyed record types (store.Keyed): each in a table of its own,
// one row per key (a primary key that refers to the device or the
// organization, whose rows go with it), and a column per member of the
// record, declared once (keyedtables.go). The one implementation below
// derives from the columns the statements that read, write, delete and
// copy the records, and the columns the read-ahead joins (memo.go). A
// transaction reads a row once (getMemo), and every write forgets it.

// keyedTable is the table of a type store.Keyed declares.
type keyedTable[K store.Key, T any] struct {
	decl *store.Keyed[K, T]
	// table and key name the table and its key column.
	table, key string
	// columns are the record's columns but the key, in the order they are
	// read; list is their select list.
	columns []keyedColumn[T]
	list    string
	// getSQL, putSQL and delSQL are the statements of get, put and del.
	getSQL, putSQL, delSQL string
}

// keyed is the table of decl's records, from its name, its key column and
// the columns of the records' other members.
func keyed[K store.Key, T any](decl *store.Keyed[K, T], table, key string, columns ...keyedColumn[T]) *keyedTable[K, T] {
	names, params, set := make([]string, len(columns)), []string{"$1"}, make([]string, len(columns))
	for i, c := range columns {
		names[i] = c.name
		params = append(params, "$"+strconv.Itoa(i+2))
		set[i] = c.name + " = EXCLUDED." + c.name
	}
	list := strings.Join(names, ", ")
	return &keyedTable[K, T]{decl: decl, table: table, key: key, columns: columns, list: list,
		getSQL: `SELECT ` + list + ` FROM ` + table + ` WHERE ` + key + ` = $1`,
		putSQL: `INSERT INTO ` + table + ` (` + key + `, ` + list + `) VALUES (` + strings.Join(params, ", ") + `)
			ON CONFLICT (` + key + `) DO UPDATE SET ` + strings.Join(set, ", "),
		delSQL: `DELETE FROM ` + table + ` WHERE ` + key + ` = $1`}
}

// fields are the scan targets of the columns in r.
func (k *keyedTable[K, T]) fields(r *T) []any {
	out := make([]any, len(k.columns))
	for i, c := range k.columns {
		out[i] = c.scan(r)
	}
	return out
}

// finish completes a record the columns were scanned into.
func (k *keyedTable[K, T]) finish(r *T) {
	for _, c := range k.columns {
		if c.finish != nil {
			c.finish(r)
		}
	}
}

// args are the parameters of Put for r: its key, then its columns.
func (k *keyedTable[K, T]) args(r *T) ([]any, error) {
	out := []any{k.decl.Key(r)}
	for _, c := range k.columns {
		v, err := c.arg(r)
		if err != nil {
			return nil, fmt.Errorf("store: encode %s of %s %v: %w", c.name, k.table, k.decl.Key(r), err)
		}
		out = append(out, v)
	}
	return out, nil
}

// listAs is the select list of the columns of the table under the alias
// as.
func (k *keyedTable[K, T]) listAs(as string) string {
	names := make([]string, len(k.columns))
	for i, c := range k.columns {
		names[i] = as + "." + c.name
	}
	return strings.Join(names, ", ")
}

// rowSpec is how the read-ahead reads the table's row of a device
// (memo.go).
func (k *keyedTable[K, T]) rowSpec() rowSpec { return rowSpec{table: k.table, columns: k.list} }

// keyedRows are the rows in t of the keyed table of T. They hold the
// transaction alone, so that an accessor returns them as an interface
// without allocating (every device message asks for its device's and its
// organization's settings).
type keyedRows[K store.Key, T any] struct{ t *tx }

// table is the keyed table of T's records, which keyedTables lists.
func (r keyedRows[K, T]) table() *keyedTable[K, T] {
	for _, k := range keyedTables {
		if k, ok := k.(*keyedTable[K, T]); ok {
			return k
		}
	}
	panic(fmt.Sprintf("store: no keyed table of %T", (*T)(nil)))
}

// Get implements store.KeyedRecords.
func (r keyedRows[K, T]) Get(k K) (*T, error) { return r.table().get(r.t, k) }

// Put implements store.KeyedRecords.
func (r keyedRows[K, T]) Put(rec *T) error { return r.table().put(r.t, rec) }

// Delete implements store.KeyedRecords.
func (r keyedRows[K, T]) Delete(k K) error { return r.table().del(r.t, k) }

// get returns the row of key k in t as a record, once per key and
// transaction (or with a read-ahead); store.ErrNotFound when there is none.
func (k *keyedTable[K, T]) get(t *tx, key K) (*T, error) {
	rec := k.decl.New(key)
	if err := getMemo(t, k.table, keyText(key), k.getSQL, k.fields(rec), key); err != nil {
		return nil, err
	}
	k.finish(rec)
	return rec, nil
}

// put upserts the row of r in t. A key whose device or organization is not
// stored is store.ErrNotFound.
func (k *keyedTable[K, T]) put(t *tx, r *T) error {
	args, err := k.args(r)
	if err != nil {
		return err
	}
	key := k.decl.Key(r)
	t.forget(k.table, keyText(key))
	_, err = t.pg.Exec(t.ctx, k.putSQL, args...)
	return missingKey(err, k.key, key)
}

// del deletes the row of key k in t.
func (k *keyedTable[K, T]) del(t *tx, key K) error {
	t.forget(k.table, keyText(key))
	_, err := t.exec(k.delSQL, key)
	return err
}

// keyText is k as the memo keys rows (memoKey).
func keyText[K store.Key](k K) string {
	switch k := any(k).(type) {
	case int64:
		return strconv.FormatInt(k, 10)
	case string:
		return k
	}
	panic("unreachable")
}

// missingKey maps a foreign key violation of a write under key k (of the
// key column key: a device's IMEI or an organization's id) to
// store.NotFound, and the rest through classify.
func missingKey[K store.Key](err error, key string, k K) error {
	var pe *pgconn.PgError
	switch {
	case !errors.As(err, &pe) || pe.Code != "23503":
		return classify(err)
	case key == "imei":
		return store.NotFound("device %v", k)
	}
	return store.NotFound("organization %v", k)
}

// keyedKind is a keyed table as a kind of record of a copy.
type keyedKind interface{ copyKind() (store.Kind, copyKind) }

// copyKind is the kind of record of k's records: every row in key order,
// each stored again through Put.
func (k *keyedTable[K, T]) copyKind() (store.Kind, copyKind) {
	return k.decl.Kind, kindOf(tableList(k.table),
		selected(`SELECT `+k.key+`, `+k.list+` FROM `+k.table+` ORDER BY `+k.key,
			func(row pgx.Row) (*T, error) {
				var zero K
				rec := k.decl.New(zero)
				if err := row.Scan(append([]any{k.decl.Field(rec)}, k.fields(rec)...)...); err != nil {
					return nil, err
				}
				k.finish(rec)
				return rec, nil
			}),
		each(k.put))
}
