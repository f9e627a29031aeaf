package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fleetcam/fleetcam/store"
)

// tx is one PostgreSQL transaction as the store's records. The methods of
// each record group are in the files named after its record types.
type tx struct {
	ctx      context.Context
	pg       pgx.Tx
	onCommit []func()
	memo     memo
	bulk     *bulk    // in a bulk transaction (bulk.go)
	loading  *loading // in a copy's Load (copy.go)
	// node is the engine's Options.Node, under which the transaction's
	// hourly event counts are written.
	node string
	// eventIDs are the event ids the transaction drew ahead and has not
	// given yet; demand is the engine's count of ids asked for
	// (eventids.go).
	eventIDs []int64
	demand   *eventDemand
}

// Aborted implements store.Aborter: a statement of the transaction failed,
// and PostgreSQL refuses every later one.
func (t *tx) Aborted() bool {
	if p := pipeOf(t); p != nil {
		return p.Aborted()
	}
	return t.pg.Conn().PgConn().TxStatus() == 'E'
}

// StartJob implements store.Pipeliner.
func (t *tx) StartJob(n int) {
	if p := pipeOf(t); p != nil {
		p.StartJob(n)
	}
}

// OnCommit implements store.Records: fn runs after the commit that counts
// (a transaction run again after a serialisation conflict forgets what its
// earlier runs asked for).
func (t *tx) OnCommit(fn func()) { t.onCommit = append(t.onCommit, fn) }

// SchemaVersion implements store.Records: the version of the last store
// migration recorded in fleetcam_meta (0 when none is).
func (t *tx) SchemaVersion() (int, error) {
	// Before the first Prepare the database has no schema at all.
	if exists, err := queryValue[bool](t, `SELECT to_regclass('fleetcam_meta') IS NOT NULL`); err != nil || !exists {
		return 0, err
	}
	var v int
	err := t.pg.QueryRow(t.ctx, `SELECT store_version FROM fleetcam_meta WHERE id = 1`).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return v, classify(err)
}

// SetSchemaVersion implements store.Records.
func (t *tx) SetSchemaVersion(v int) error {
	_, err := t.pg.Exec(t.ctx, `INSERT INTO fleetcam_meta (id, store_version) VALUES (1, $1)
		ON CONFLICT (id) DO UPDATE SET store_version = EXCLUDED.store_version`, v)
	return classify(err)
}

// exec runs one statement of the transaction.
func (t *tx) exec(sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := t.pg.Exec(t.ctx, sql, args...)
	return tag, classify(err)
}

// classify maps an error of the driver to the store's: a connection that
// could not be made or was lost is store.ErrUnavailable (as is a statement
// that ran past the statement timeout, an overloaded server); a unique
// violation the rules did not foresee (two nodes inserting the same key at
// once) is store.ErrConflict; the rest keeps its text under the store's
// prefix.
func classify(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var se *store.Error
	if errors.As(err, &se) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if strings.HasPrefix(err.Error(), "store: ") {
			return err // classified before
		}
		switch {
		case pe.Code == "23505":
			return store.Conflict("%s", pe.Detail)
		case pe.Code == "40001", pe.Code == "40P01":
			// Still the driver's error underneath: update runs the
			// transaction again on it (retryable).
			return fmt.Errorf("%w: %w", store.ErrTxConflict, err)
		case pe.Code == "22021", pe.Code == "22P05":
			// Text PostgreSQL cannot keep (a NUL character) that the
			// callers' own checks let through.
			return store.Invalid("text", "must not contain the NUL character")
		case pe.Code == "57014", pe.Code == "53300", lostConnection(err):
			return store.Unavailable(err)
		}
		return fmt.Errorf("store: postgres: %w", err)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.NotFound("")
	}
	if lostConnection(err) {
		return store.Unavailable(err)
	}
	return fmt.Errorf("store: postgres: %w", err)
}
