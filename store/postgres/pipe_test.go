package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// pgx.BeginFunc runs a function in a savepoint of the transaction's pipe:
// what a function that succeeds writes stays, what one that fails writes
// goes, and the transaction goes on either way (pgx rolls back the
// savepoint it released, which must find it closed).
func TestSavepointsUnderBeginFunc(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	failed := errors.New("refused")
	write(t, e, func(t *tx) error {
		if _, err := t.exec(`CREATE TEMPORARY TABLE kept (v int) ON COMMIT DROP`); err != nil {
			return err
		}
		err := pgx.BeginFunc(t.ctx, t.pg, func(sp pgx.Tx) error {
			_, err := sp.Exec(t.ctx, `INSERT INTO kept VALUES (1)`)
			return err
		})
		if err != nil {
			return err
		}
		err = pgx.BeginFunc(t.ctx, t.pg, func(sp pgx.Tx) error {
			if _, err := sp.Exec(t.ctx, `INSERT INTO kept VALUES (2)`); err != nil {
				return err
			}
			return failed
		})
		if !errors.Is(err, failed) {
			return errors.Join(errors.New("the failing function's error is lost"), err)
		}
		var sum int
		if err := t.pg.QueryRow(context.Background(), `SELECT coalesce(sum(v), 0) FROM kept`).Scan(&sum); err != nil {
			return err
		}
		if sum != 1 {
			return fmt.Errorf("the savepoints kept rows summing to %d, want 1", sum)
		}
		return nil
	})
}
