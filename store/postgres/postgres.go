// Package postgres is fleetcam's PostgreSQL storage engine: the records of
// the store in a relational schema (tables with typed columns and foreign
// keys, the time series partitioned by time), migrated by versioned SQL
// embedded in the binary. Like every engine it keeps records and indexes
// only; the rules that decide what is written are the store's.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/fleetcam/fleetcam/store"
)

// Options tune the engine.
type Options struct {
	// StatementTimeout bounds each statement on the server
	// (DefaultStatementTimeout when 0).
	StatementTimeout time.Duration
	// MaxConns bounds the connection pool (pgxpool's default when 0).
	MaxConns int32
	// Node is this process's node id in a cluster (cluster.nodeId), ""
	// for a server of its own. A transaction has no node id of its own:
	// the engine writes its hourly event counts under this one
	// (eventcounts.go), so that the nodes of a cluster never update one
	// count row. It must be stable across restarts (a value per start
	// would add rows per start) and differ between the nodes that write
	// at once; nodes that share one are still correct, and only meet in
	// conflicts their transactions run again after.
	Node string
	// Warm keeps both pools open in full from the start, each connection
	// ready for the reads it serves most (warm.go): a
	// server's, which may take a fleet the moment it starts. Tests and
	// one-off commands leave it off.
	Warm bool
}

// DefaultStatementTimeout is the statement timeout when Options leave it 0:
// the API's own request timeout, so that no statement outlives its call.
const DefaultStatementTimeout = 30 * time.Second

// Engine is the PostgreSQL storage engine over a connection pool, and a
// smaller one for the views of connecting devices.
type Engine struct {
	pool *pgxpool.Pool
	// views holds the connections a device's own view reads on
	// (ViewDevice): see viewPoolConfig.
	views *pgxpool.Pool
	// gather sends the views' reads, those of views that start at once
	// together (viewgather.go).
	gather *viewGather
	// node is Options.Node.
	node string
	// sent counts the round trips and statements of the pool's
	// connections (roundtrips.go).
	sent *roundTrips
	// readEnds counts the reads whose ROLLBACK is on its way (endRead).
	readEnds atomic.Int64
	// demand counts the event ids asked for since the last draw
	// (eventids.go).
	demand *eventDemand
	// warmUp is Options.Warm; warm is set once the schema is there and
	// new connections can be warmed (warm.go).
	// warmed holds the connections warmed.
	warmUp bool
	warm   atomic.Bool
	warmed sync.Map
}

// OpenEngine connects to the database at url (a libpq URL or key=value
// string) and checks that it answers. It changes nothing: Prepare applies
// the schema.
func OpenEngine(ctx context.Context, url string, o Options) (*Engine, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: postgres URL: %w", err)
	}
	timeout := o.StatementTimeout
	if timeout <= 0 {
		timeout = DefaultStatementTimeout
	}
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = fmt.Sprint(timeout.Milliseconds())
	cfg.ConnConfig.RuntimeParams["application_name"] = "fleetcam"
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	// A commit returns once it is durable, whatever the server's default:
	// a device's PUBACK and an API answer mean the write survives a crash.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	sent := &roundTrips{}
	cfg.ConnConfig.Tracer = sent
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	// Connections opened together (a warm pool's, at the start) end their
	// lifetime at different times, and are opened again one by one.
	cfg.MaxConnLifetimeJitter = cfg.MaxConnLifetime / 4
	e := &Engine{node: o.Node, sent: sent, demand: &eventDemand{}, warmUp: o.Warm}
	vcfg := viewPoolConfig(cfg)
	if o.Warm {
		e.warmConfig(cfg, cfg.MaxConns, warmEngineConn)
		e.warmConfig(vcfg, vcfg.MaxConns, warmViews)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: postgres at %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	views, err := pgxpool.NewWithConfig(ctx, vcfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: postgres: %w", err)
	}
	e.pool, e.views = pool, views
	e.gather = &viewGather{e: e, most: int(views.Config().MaxConns)}
	return e, nil
}

// viewPoolConfig is the configuration of the pool the views of connecting
// devices read on, from the engine's: a quarter of its connections (at
// least two), each planning every statement once, for any device, and
// each running what one round trip sends as one read-only REPEATABLE READ
// transaction of its own.
//
// A connection storm (a node's devices reconnecting after a restart or a
// failover) is thousands of such views, two per device, each one round
// trip of a few index lookups. On the engine's own pool they took every
// connection, and the group commit that records the devices online waited
// for the server behind them; and each new connection planned each of the
// views' statements for its values five times over before it kept a
// generic plan, which in a storm on a fresh pool cost more than running
// them. The views' reads are of a few devices by their keys, one index
// probe each, whose plan is the same whatever the devices, so these
// connections use the generic plan from the first execution
// (plan_cache_mode): planned for their values, reads over an array of
// devices are planned again at every execution (memo.go, devicesOfArray).
//
// A view sends its reads in one round trip, a pipeline ended by one Sync,
// which the server runs as one implicit transaction; with these
// connections' default isolation that transaction reads from one snapshot,
// as BEGIN ISOLATION LEVEL REPEATABLE READ would have it, without the BEGIN
// and the COMMIT that were two of a view's statements (viewgather.go).
func viewPoolConfig(cfg *pgxpool.Config) *pgxpool.Config {
	v := cfg.Copy()
	v.MaxConns = max(2, cfg.MaxConns/4)
	v.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	// Every read of a view finds its rows by key, and its connection keeps
	// the plan of its first execution, made perhaps while a table was
	// empty: a scan of the whole table planned then reads every row of
	// it at each view once the fleet has filled it.
	v.ConnConfig.RuntimeParams["enable_seqscan"] = "off"
	v.ConnConfig.RuntimeParams["default_transaction_isolation"] = "repeatable read"
	v.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	return v
}

// Ping implements store.Pinger: store.ErrUnavailable when no connection to
// the server can be had.
func (e *Engine) Ping(ctx context.Context) error {
	if err := e.pool.Ping(ctx); err != nil {
		return store.Unavailable(err)
	}
	return nil
}

// Close closes the pools; no transaction may run beside it.
func (e *Engine) Close() error {
	e.views.Close()
	e.pool.Close()
	return nil
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockID is the key of the session advisory lock that processes
// starting together take while they migrate, so that each migration is
// applied once ("fleetcam" in ASCII).
const migrationLockID = 0x666c656574636d

// migrationLockWait bounds a process's wait for the migration lock, as
// long as goose's own locker waits: a migration that takes longer (a large
// table's new index, say) is run with fleetcam migrate before the nodes
// start.
const migrationLockWait = 5 * time.Minute

// migrationLocker is the session lock goose holds while it migrates:
// PostgreSQL's session advisory lock migrationLockID, waited for by the
// server, which grants it the moment the process before releases it.
// (goose's own locker asks with pg_try_advisory_lock every 5 seconds, so a
// node of a cluster started beside another waited 5 seconds or more for a
// lock held for milliseconds.)
type migrationLocker struct{}

func (migrationLocker) SessionLock(ctx context.Context, conn *sql.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, migrationLockWait)
	defer cancel()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLockID)); err != nil {
		return fmt.Errorf("store: postgres migration lock (waited at most %s): %w", migrationLockWait, err)
	}
	return nil
}

func (migrationLocker) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	var held bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_advisory_unlock($1)", int64(migrationLockID)).Scan(&held); err != nil {
		return fmt.Errorf("store: postgres migration unlock: %w", err)
	}
	if !held {
		return errors.New("store: postgres migration unlock: the session did not hold the migration lock")
	}
	return nil
}

// Prepare applies the schema migrations the database has not recorded, in
// order, each in its own transaction, while holding an advisory lock: a
// second process starting at the same time waits, then finds nothing to do.
// A database migrated by a newer version is refused. Then it creates the
// partitions of the time series around now, and a warm engine warms its
// pools (warm.go).
func (e *Engine) Prepare(ctx context.Context) error {
	if _, err := e.Migrate(ctx); err != nil {
		return err
	}
	if err := e.Maintain(ctx, time.Now()); err != nil {
		return err
	}
	if e.warmUp {
		return e.warmPools(ctx)
	}
	return nil
}

// Maintain implements store.Maintainer: it creates the partitions of the
// time series around now that do not exist yet (the retention purge calls
// it before each run, so a server that runs for months always has the
// coming days' and months' partitions).
func (e *Engine) Maintain(ctx context.Context, now time.Time) error {
	if err := ensurePartitions(ctx, e, now, partitionedTables); err != nil {
		return fmt.Errorf("store: postgres partitions: %w", err)
	}
	return nil
}

// Migrate is Prepare that also says which migrations it applied.
func (e *Engine) Migrate(ctx context.Context) ([]string, error) {
	p, db, err := e.provider()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	current, err := p.GetDBVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: postgres schema version: %w", err)
	}
	sources := p.ListSources()
	if latest := sources[len(sources)-1].Version; current > latest {
		return nil, fmt.Errorf("store: the database has schema version %d and this version of fleetcam knows up to %d; run the newer version, or restore a backup taken before it ran", current, latest)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: postgres migration: %w", err)
	}
	var applied []string
	for _, r := range results {
		name := r.Source.Path
		if name == "" {
			name = goMigrationName(r.Source.Version)
		}
		applied = append(applied, fmt.Sprintf("%d %s", r.Source.Version, name))
	}
	return applied, nil
}

// provider is goose over the engine's pool, with the migration lock: the
// SQL files of migrations/ and the Go migrations (gomigrations.go).
func (e *Engine) provider() (*goose.Provider, *sql.DB, error) {
	dir, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, nil, err
	}
	db := stdlib.OpenDBFromPool(e.pool)
	p, err := goose.NewProvider(goose.DialectPostgres, db, dir,
		goose.WithSessionLocker(migrationLocker{}), goose.WithTableName("fleetcam_schema_migrations"),
		goose.WithDisableGlobalRegistry(true), goose.WithGoMigrations(gooseGoMigrations()...))
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("store: postgres migrations: %w", err)
	}
	return p, db, nil
}

// A transaction that lost a serialisation conflict runs again at least
// minAttempts times. An update runs again for at least retryWindow since
// its first run as well: its caller (an API request) has nothing else to
// fall back on, and never pays for the server's own contention. Several
// callers that write one organization at once (a partner's import in
// parallel, the nodes of a cluster) abort one another over and over on a
// busy machine, where a run takes long, and each round one of them wins;
// a window of seconds rather than a number of attempts outlasts them. A
// group commit's batch does not wait that long: after its attempts it is
// split in halves (store.Committer), and a device's message that still
// loses is tried again by the broker for as long as it may wait.
const (
	minAttempts = 10
	retryWindow = 10 * time.Second
)

// update runs fn in one SERIALIZABLE read-write transaction. PostgreSQL
// aborts one of two transactions whose reads and writes overlap; the loser
// runs again, from the start, so fn must leave nothing behind outside the
// transaction except through OnCommit (which runs only after the commit
// that counts). A connection lost mid-write is reported as
// store.ErrUnavailable: whether the commit happened is unknown, and the
// caller (an API request, a device's unacknowledged message) retries.
func (e *Engine) update(ctx context.Context, fn func(*tx) error) error {
	return e.updateAt(ctx, pgx.Serializable, retryWindow, fn)
}

// updateAt is update at isolation level iso, run again after conflicts
// minAttempts times and for at least window.
func (e *Engine) updateAt(ctx context.Context, iso pgx.TxIsoLevel, window time.Duration, fn func(*tx) error) error {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		t, err := e.begin(ctx, pgx.TxOptions{IsoLevel: iso})
		if err != nil {
			return err
		}
		err = fn(t)
		if err == nil {
			err = t.pg.Commit(ctx)
		}
		if err == nil {
			for _, f := range t.onCommit {
				f()
			}
			return nil
		}
		t.pg.Rollback(context.WithoutCancel(ctx))
		if !retryable(err) || attempt >= minAttempts && time.Since(start) >= window {
			return classify(err)
		}
		// Jittered backoff, so that the two losers of one conflict do not
		// meet again at once, doubling from 2 ms up to 200 ms: several
		// writers at once (the nodes of a cluster, each with its group
		// commit) keep meeting after a few milliseconds.
		backoff := time.Duration(rand.Int64N(int64(min(2*time.Millisecond<<(attempt-1), 200*time.Millisecond))))
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// view runs fn in one read-only REPEATABLE READ transaction (one snapshot).
// A read whose connection was lost is tried once more on another.
func (e *Engine) view(ctx context.Context, fn func(*tx) error) error {
	for attempt := 1; ; attempt++ {
		t, err := e.begin(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err == nil {
			err = fn(t)
			pipeOf(t).endRead(&e.readEnds)
		}
		err = classify(err)
		if err == nil || attempt == 2 || !errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil {
			return err
		}
	}
}

func (e *Engine) begin(ctx context.Context, o pgx.TxOptions) (*tx, error) {
	return e.beginOn(ctx, e.pool, o)
}

// beginOn is begin on a connection of pool.
func (e *Engine) beginOn(ctx context.Context, pool *pgxpool.Pool, o pgx.TxOptions) (*tx, error) {
	p, err := openPipe(ctx, pool, o)
	if err != nil {
		return nil, classify(err)
	}
	return &tx{ctx: ctx, pg: p, node: e.node, demand: e.demand}, nil
}

// retryable reports a serialisation failure or deadlock, after which the
// transaction runs again. A commit that PostgreSQL turned into a rollback
// counts too, and so does a statement refused because the transaction is
// already aborted (25P02): a statement of the transaction failed and the
// store's rules went on without its answer (a read whose absence they
// tolerate), and under SERIALIZABLE that failure is a conflict of the
// same kind; a transaction that failed for another reason fails again on
// each run and reports its error after the last.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01" || pe.Code == "25P02") ||
		errors.Is(err, pgx.ErrTxCommitRollback)
}

// lostConnection reports an error of the connection rather than of the
// statement: the server went away, or could not be reached.
func lostConnection(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// admin_shutdown, crash_shutdown, cannot_connect_now
		return pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err) || errors.As(err, &ce) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}
