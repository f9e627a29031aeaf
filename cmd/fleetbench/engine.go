package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fleetcam/fleetcam/internal/pgserver"
	"github.com/fleetcam/fleetcam/store"
	boltstore "github.com/fleetcam/fleetcam/store/bolt"
	"github.com/fleetcam/fleetcam/store/postgres"
)

// The storage engines a part runs on; -postgres adds the second.
const (
	engineBolt     = "bbolt"
	enginePostgres = "postgres"
)

// engineTitle is how the tables name an engine.
func engineTitle(engine string) string {
	if engine == enginePostgres {
		return "PostgreSQL"
	}
	return engine
}

// storage is the store one fleetcam of the bench runs on: its data
// directory (the bbolt file, media, the configuration and log beside it)
// and, on PostgreSQL, a database of its own. Seeding, the durability check
// and the purge open it through open, whatever the engine.
type storage struct {
	engine  string
	dataDir string
	pgURL   string // the database, on PostgreSQL
}

// open opens the store as fleetcam would with this storage.
func (s storage) open(ctx context.Context, o store.Options) (*store.DB, error) {
	if s.engine == enginePostgres {
		return postgres.Open(ctx, s.pgURL, postgres.Options{}, o)
	}
	return boltstore.Open(filepath.Join(s.dataDir, "fleetcam.db"), o)
}

// newStorage makes a fresh store location for a part on the current
// engine: a new directory and, on PostgreSQL, a new database. When more
// than one part runs on PostgreSQL, that database is a copy of the run's
// migrated one (migrated); a run with one, such as -cluster, would only
// add a copy to the migrations, and its part gets an empty database, which
// its seeding migrates.
func (b *bench) newStorage(ctx context.Context, name string) (storage, error) {
	if b.engine == enginePostgres && b.pgParts > 1 {
		template, err := b.migrated(ctx)
		if err != nil {
			return storage{engine: b.engine}, err
		}
		return b.copyStorage(ctx, template, name)
	}
	st := storage{engine: b.engine, dataDir: b.dir(name + "-" + b.engine)}
	if b.engine != enginePostgres {
		return st, nil
	}
	var err error
	st.pgURL, err = b.pg.createDatabase(ctx, b.partDatabase(name), "")
	return st, err
}

// partDatabase names the database of a part's storage in this run.
func (b *bench) partDatabase(name string) string {
	return fmt.Sprintf("fleetbench_%02d_%s", b.serial, name)
}

// migratedDatabase names the database migrated makes.
const migratedDatabase = "fleetbench_migrated"

// migrated returns the run's migrated database, making it the first time
// a part needs a store on PostgreSQL: a new database on which the store
// is opened once, which applies every schema migration and creates the
// partitions around now, and then closed, so that nothing is connected to
// it when it is copied (PostgreSQL refuses to copy a template in use).
// Opening the store on an empty database applies the migrations one
// transaction each, every one made durable by the server, and took each
// part a second or more before it measured anything; a copy of the
// migrated database takes a fraction of that. No part measures the
// migrations: each opens its store to seed it before fleetcam starts on
// it, and an open that finds the schema up to date still creates the
// partitions around its own now that are missing. The run drops it at
// the end (closePostgres).
func (b *bench) migrated(ctx context.Context) (storage, error) {
	if b.pgTemplate.pgURL != "" {
		return b.pgTemplate, nil
	}
	t0 := time.Now()
	st := storage{engine: enginePostgres}
	var err error
	if st.pgURL, err = b.pg.createDatabase(ctx, migratedDatabase, ""); err != nil {
		return storage{}, err
	}
	db, err := st.open(ctx, store.Options{})
	if err == nil {
		err = db.Close()
	}
	if err != nil {
		b.dropStorage(ctx, st)
		return storage{}, fmt.Errorf("migrate the database the parts copy: %w", err)
	}
	fmt.Fprintf(b.log, "  migrated %s, which every part's database on PostgreSQL copies, in %s\n", migratedDatabase,
		time.Since(t0).Round(time.Millisecond))
	b.pgTemplate = st
	return st, nil
}

// closePostgres ends the run on PostgreSQL: the migrated database goes
// as the parts' do (dropStorage), then the server is closed.
func (b *bench) closePostgres(ctx context.Context) error {
	return errors.Join(b.dropStorage(ctx, b.pgTemplate), b.pg.close(b.o.keep))
}

// copyStorage makes a copy of st, which no process may have open, under a
// new name: the bbolt file copied, or a PostgreSQL database made from st's
// as its template.
func (b *bench) copyStorage(ctx context.Context, st storage, name string) (storage, error) {
	cp := storage{engine: st.engine, dataDir: b.dir(name + "-" + st.engine)}
	if st.engine == enginePostgres {
		var err error
		cp.pgURL, err = b.pg.createDatabase(ctx, b.partDatabase(name), databaseName(st.pgURL))
		return cp, err
	}
	return cp, copyFile(filepath.Join(st.dataDir, "fleetcam.db"), filepath.Join(cp.dataDir, "fleetcam.db"))
}

// dropStorage removes st's database (its directory goes with the work
// directory), unless -keep keeps everything.
func (b *bench) dropStorage(ctx context.Context, st storage) error {
	if st.engine != enginePostgres || b.o.keep {
		return nil
	}
	return b.pg.dropDatabase(ctx, databaseName(st.pgURL))
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// pgServer is the PostgreSQL server the bench makes its databases on:
// the one -postgres names, or one it started itself (-postgres auto).
type pgServer struct {
	admin   *url.URL          // a database of the server to connect to for CREATE DATABASE
	started *pgserver.Server  // with -postgres auto
	stats   bool              // pg_stat_statements can be read (-profile)
	created map[string]string // databases made, by name
}

// checkPostgresFlag checks the form of -postgres before anything starts:
// auto, or a postgres:// URL that the driver accepts. The URL returned is
// nil for auto.
func checkPostgresFlag(v string) (*url.URL, error) {
	if v == "auto" {
		return nil, nil
	}
	const rule = "must be auto or a libpq URL of a server the bench may create databases on, such as postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return nil, fmt.Errorf("-postgres %q: %s", redact(v, u), rule)
	}
	if _, err := pgx.ParseConfig(v); err != nil {
		return nil, fmt.Errorf("-postgres %q: %s (%s)", u.Redacted(), rule, redact(oneLine(err), u))
	}
	return u, nil
}

// redact hides the password of u (when u has one) in s.
func redact(s string, u *url.URL) string {
	if u == nil || u.User == nil {
		return s
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		return strings.ReplaceAll(s, pw, "xxxxx")
	}
	return s
}

// startPostgres connects to the server of -postgres, or starts one in the
// work directory for -postgres auto, and checks that it may create
// databases. With stats, pg_stat_statements is loaded (auto) or looked for.
func startPostgres(ctx context.Context, flagValue, work string, keep, stats bool, log io.Writer) (*pgServer, error) {
	p := &pgServer{created: map[string]string{}}
	if flagValue == "auto" {
		o := pgserver.Options{Parent: work, Durable: true, Keep: keep}
		if stats {
			o.Settings = pgStatsSettings
		}
		s, err := pgserver.Start(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("-postgres auto: %w", err)
		}
		p.started = s
		p.admin, _ = url.Parse(s.URL("postgres"))
		fmt.Fprintf(log, "fleetbench: PostgreSQL started on 127.0.0.1:%d in %s\n", s.Port(), s.Dir())
	} else {
		u, err := checkPostgresFlag(flagValue)
		if err != nil {
			return nil, err
		}
		p.admin = u
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, p.admin.String())
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("-postgres %s: cannot connect: %v", p.admin.Redacted(), oneLine(err))
	}
	defer conn.Close(ctx)
	var mayCreate bool
	var version string
	err = conn.QueryRow(cctx, `SELECT rolsuper OR rolcreatedb, current_setting('server_version') FROM pg_roles WHERE rolname = current_user`).Scan(&mayCreate, &version)
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("-postgres %s: %v", p.admin.Redacted(), oneLine(err))
	}
	if !mayCreate {
		p.stop()
		return nil, fmt.Errorf("-postgres %s: role %s may not create databases (it needs CREATEDB)", p.admin.Redacted(), p.admin.User.Username())
	}
	if stats {
		_, err := conn.Exec(cctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
		if err == nil {
			_, err = conn.Exec(cctx, `SELECT pg_stat_statements_reset()`)
		}
		p.stats = err == nil
		if err != nil {
			fmt.Fprintf(log, "fleetbench: no statement statistics from PostgreSQL (load pg_stat_statements in shared_preload_libraries for them): %v\n", oneLine(err))
		}
	}
	fmt.Fprintf(log, "fleetbench: PostgreSQL %s at %s\n", version, p.admin.Redacted())
	return p, nil
}

// describe names the server for the report header.
func (p *pgServer) describe() string {
	if p.started != nil {
		return fmt.Sprintf("%s, started by fleetbench (-postgres auto: fsync on, shared_buffers 256MB) in %s", p.admin.Redacted(), p.started.Dir())
	}
	return p.admin.Redacted()
}

// pid is the postmaster's process id of a server -postgres auto started,
// and 0 for one it did not start (whose processes may not be on this
// machine).
func (p *pgServer) pid() int {
	if p == nil || p.started == nil {
		return 0
	}
	return p.started.PID()
}

// databaseURL is the URL of database name on the server.
func (p *pgServer) databaseURL(name string) string {
	u := *p.admin
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

// createDatabase creates database name (as a copy of template, when set)
// and returns its URL.
func (p *pgServer) createDatabase(ctx context.Context, name, template string) (string, error) {
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		stmt += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	if err := p.exec(ctx, stmt); err != nil {
		return "", err
	}
	p.created[name] = p.databaseURL(name)
	return p.created[name], nil
}

// dropDatabase drops a database the bench created.
func (p *pgServer) dropDatabase(ctx context.Context, name string) error {
	if err := p.exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return err
	}
	delete(p.created, name)
	return nil
}

// exec runs one statement on the admin database.
func (p *pgServer) exec(ctx context.Context, stmt string) error {
	conn, err := pgx.Connect(ctx, p.admin.String())
	if err != nil {
		return fmt.Errorf("postgres %s: %w", p.admin.Redacted(), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("postgres: %s: %w", stmt, err)
	}
	return nil
}

// close drops the databases still there (unless keep) and stops the server
// the bench started.
func (p *pgServer) close(keep bool) error {
	var errs []error
	if !keep && p.started == nil {
		for name := range p.created {
			errs = append(errs, p.dropDatabase(context.Background(), name))
		}
	}
	errs = append(errs, p.stop())
	return errors.Join(errs...)
}

func (p *pgServer) stop() error {
	if p.started == nil {
		return nil
	}
	err := p.started.Stop()
	p.started = nil
	return err
}

// databaseName is the database of a libpq URL.
func databaseName(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.Path, "/")
}

// oneLine keeps an error to its first line.
func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// settleStore does to a seeded store on PostgreSQL what autovacuum and the
// checkpointer do as a store runs, saying how long it took: seeding writes
// months of history in a minute, and the part would otherwise measure its
// loads beside the vacuuming and analysing of all of it, against tables
// whose contents the planner does not know yet, and beside the checkpoints
// that the seeding's gigabyte of WAL starts, which write and fsync the
// seeded pages while the load runs. VACUUM (ANALYZE) of the database, then
// a CHECKPOINT: the load then starts where a store that grew over months
// would be, its history on disk.
func (b *bench) settleStore(ctx context.Context, st storage) error {
	if st.engine != enginePostgres {
		return nil
	}
	t0 := time.Now()
	conn, err := pgx.Connect(ctx, st.pgURL)
	if err != nil {
		return fmt.Errorf("settle the seeded store: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "VACUUM (ANALYZE)"); err != nil {
		return fmt.Errorf("settle the seeded store: %w", err)
	}
	done := "vacuumed, analysed and checkpointed"
	var pe *pgconn.PgError
	if _, err := conn.Exec(ctx, "CHECKPOINT"); errors.As(err, &pe) && pe.Code == "42501" {
		// A server of -postgres whose role may not checkpoint
		// (insufficient_privilege): its own checkpoints may then fall in
		// the windows.
		done = "vacuumed and analysed (this role may not run CHECKPOINT)"
	} else if err != nil {
		return fmt.Errorf("settle the seeded store: checkpoint: %w", err)
	}
	fmt.Fprintf(b.log, "  %s the seeded store in %s\n", done, time.Since(t0).Round(time.Millisecond))
	return nil
}
