package postgres

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"

	"github.com/fleetcam/fleetcam/store"
)

// goMigration is a schema migration written in Go, for a change whose
// values only Go computes. It takes a version of its own among those of
// the SQL files in migrations/ and is applied in order with them, in its
// own transaction, like them.
type goMigration struct {
	version  int64
	name     string // as a file of migrations/ would be named
	up, down func(ctx context.Context, tx *sql.Tx) error
}

// goMigrations are the Go schema migrations, in version order.
var goMigrations = []goMigration{
	{version: 20, name: "00020_folded_names", up: foldNamesUp, down: foldNamesDown},
}

// gooseGoMigrations are goMigrations as goose runs them.
func gooseGoMigrations() []*goose.Migration {
	out := make([]*goose.Migration, len(goMigrations))
	for i, m := range goMigrations {
		out[i] = goose.NewGoMigration(m.version, &goose.GoFunc{RunTx: m.up}, &goose.GoFunc{RunTx: m.down})
	}
	return out
}

// goMigrationName is the name of the Go migration of version v, "" for none.
func goMigrationName(v int64) string {
	for _, m := range goMigrations {
		if m.version == v {
			return m.name
		}
	}
	return ""
}

// foldBatch is how many rows one statement of a migration that computes
// keys in Go updates.
const foldBatch = 5000

// foldNamesUp (00020) gives every driver the store.FoldCase keys of its
// first and last names, first_name_folded and last_name_folded, which the
// driver list sorts by, and gives each device whose name_folded is not
// the store.FoldCase key of its name (it held bytes.ToLower's lower case,
// which differs for a few letters such as ς and µ) that key. The driver
// list sorted by lower() before, which the database's locale decides.
func foldNamesUp(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `ALTER TABLE drivers ADD COLUMN first_name_folded text COLLATE "C",
		ADD COLUMN last_name_folded text COLLATE "C"`); err != nil {
		return err
	}
	var ids []int64
	var firsts, lasts []string
	err := eachRow(ctx, tx, `SELECT id, first_name, last_name FROM drivers`, func(scan func(...any) error) error {
		var id int64
		var first, last string
		if err := scan(&id, &first, &last); err != nil {
			return err
		}
		ids, firsts, lasts = append(ids, id), append(firsts, store.FoldCase(first)), append(lasts, store.FoldCase(last))
		return nil
	})
	if err != nil {
		return err
	}
	for i := 0; i < len(ids); i += foldBatch {
		j := min(i+foldBatch, len(ids))
		if _, err := tx.ExecContext(ctx, `UPDATE drivers d SET first_name_folded = u.first, last_name_folded = u.last
			FROM unnest($1::bigint[], $2::text[], $3::text[]) AS u (id, first, last) WHERE d.id = u.id`,
			ids[i:j], firsts[i:j], lasts[i:j]); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `ALTER TABLE drivers ALTER COLUMN first_name_folded SET NOT NULL,
		ALTER COLUMN last_name_folded SET NOT NULL`); err != nil {
		return err
	}
	return refoldDeviceNames(ctx, tx, store.FoldCase)
}

// foldNamesDown undoes foldNamesUp: the drivers' keys go, and the
// devices' name_folded is bytes.ToLower's lower case of the name again.
func foldNamesDown(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `ALTER TABLE drivers DROP COLUMN first_name_folded,
		DROP COLUMN last_name_folded`); err != nil {
		return err
	}
	return refoldDeviceNames(ctx, tx, func(name string) string { return string(bytes.ToLower([]byte(name))) })
}

// refoldDeviceNames sets each device's name_folded to fold of its name
// where it differs.
func refoldDeviceNames(ctx context.Context, tx *sql.Tx, fold func(string) string) error {
	var imeis, folded []string
	err := eachRow(ctx, tx, `SELECT imei, name, name_folded FROM devices`, func(scan func(...any) error) error {
		var imei, name, was string
		if err := scan(&imei, &name, &was); err != nil {
			return err
		}
		if f := fold(name); f != was {
			imeis, folded = append(imeis, imei), append(folded, f)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := 0; i < len(imeis); i += foldBatch {
		j := min(i+foldBatch, len(imeis))
		if _, err := tx.ExecContext(ctx, `UPDATE devices d SET name_folded = u.folded
			FROM unnest($1::text[], $2::text[]) AS u (imei, folded) WHERE d.imei = u.imei`,
			imeis[i:j], folded[i:j]); err != nil {
			return err
		}
	}
	return nil
}

// eachRow runs query in tx and calls fn with the scan of each row.
func eachRow(ctx context.Context, tx *sql.Tx, query string, fn func(scan func(...any) error) error) error {
	rows, err := tx.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows.Scan); err != nil {
			return fmt.Errorf("%s: %w", query, err)
		}
	}
	return rows.Err()
}
