package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
	boltstore "github.com/fleetcam/fleetcam/store/bolt"
	"github.com/fleetcam/fleetcam/store/postgres"
)

// storeCopyUsage is the one line of `fleetcam store copy`'s usage.
const storeCopyUsage = "usage: fleetcam store copy -from FILE|URL -to FILE|URL, or fleetcam store copy -media -from DIR|s3://BUCKET -to DIR|s3://BUCKET"

// storeCommand runs `fleetcam store SUBCOMMAND`: copy is the one there is.
func storeCommand(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "copy" {
		return errors.New(storeCopyUsage)
	}
	if slices.ContainsFunc(args[1:], func(a string) bool { return a == "-media" || a == "--media" || a == "-media=true" }) {
		if err := mediaCommand(ctx, args[1:], getenv, stdout); err != nil {
			return oneLine{err}
		}
		return nil
	}
	fs := flag.NewFlagSet("fleetcam store copy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	from := fs.String("from", "", "the store to copy: a bbolt file or a postgres:// URL")
	to := fs.String("to", "", "the empty store to copy it into: a bbolt file or a postgres:// URL")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("store copy: %w (%s)", err, storeCopyUsage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("store copy: unexpected %q (%s)", fs.Arg(0), storeCopyUsage)
	}
	src, err := parseStoreLocation("-from", *from)
	if err != nil {
		return err
	}
	dst, err := parseStoreLocation("-to", *to)
	if err != nil {
		return err
	}
	if src.same(dst) {
		return fmt.Errorf("-from and -to name the same store (%s): the copy goes into another, empty store", src)
	}
	if err := copyStore(ctx, src, dst, stdout); err != nil {
		return oneLine{err}
	}
	return nil
}

// oneLine is an error whose text is on one line: the driver's errors of a
// server it could not reach list each address tried on a line of its own.
type oneLine struct{ err error }

// Error is the text of the error, its lines trimmed and joined by "; ".
func (e oneLine) Error() string {
	lines := strings.Split(e.err.Error(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, " ")
}

// Unwrap is the error.

func (e oneLine) Unwrap() error { return e.err }

// storeLocation is a store named on the command line: a bbolt file or a
// PostgreSQL database.
type storeLocation struct {
	flag string
	path string          // the bbolt file, absolute
	url  string          // the PostgreSQL URL
	pg   *pgx.ConnConfig // url parsed
}

// parseStoreLocation reads the value v of flag name: a postgres:// or
// postgresql:// URL, or else the path of a bbolt file.
func parseStoreLocation(name, v string) (storeLocation, error) {
	l := storeLocation{flag: name}
	if strings.TrimSpace(v) == "" {
		return l, fmt.Errorf("%s is required: a bbolt store file (such as data/fleetcam.db) or a postgres:// URL (%s)",
			name, storeCopyUsage)
	}
	if scheme, _, ok := strings.Cut(v, "://"); ok {
		if s := strings.ToLower(scheme); s != "postgres" && s != "postgresql" {
			return l, fmt.Errorf("%s must be a bbolt store file or a postgres:// or postgresql:// URL, not a %s:// URL", name, scheme)
		}
		cfg, err := pgx.ParseConfig(v)
		if err != nil {
			return l, fmt.Errorf("%s must be a valid PostgreSQL URL: %w", name, err)
		}
		l.url, l.pg = v, cfg
		return l, nil
	}
	abs, err := filepath.Abs(v)
	if err != nil {
		return l, fmt.Errorf("%s %s: %w", name, v, err)
	}
	l.path = abs
	return l, nil
}

// String names the store without the URL's password.
func (l storeLocation) String() string {
	if l.pg == nil {
		return l.path
	}
	return fmt.Sprintf("PostgreSQL database %s on %s:%d", l.pg.Database, l.pg.Host, l.pg.Port)
}

// same reports whether l and o are the same store: the same file (through
// symbolic links), or the same database of the same server.
func (l storeLocation) same(o storeLocation) bool {
	if (l.pg == nil) != (o.pg == nil) {
		return false
	}
	if l.pg != nil {
		return l.pg.Host == o.pg.Host && l.pg.Port == o.pg.Port && l.pg.Database == o.pg.Database
	}
	a, errA := filepath.EvalSymlinks(l.path)
	b, errB := filepath.EvalSymlinks(o.path)
	if errA != nil || errB != nil {
		return l.path == o.path
	}
	return a == b
}

// copyStore copies every record of src into dst, printing the progress of
// each kind and then the counts of both sides; counts that differ leave
// dst without the copy and fail.
func copyStore(ctx context.Context, src, dst storeLocation, stdout io.Writer) error {
	if st, err := os.Stat(dst.path); dst.pg == nil && err == nil && st.IsDir() {
		return fmt.Errorf("-to %s is a directory: name the store file to make in it (fleetcam.db)", dst)
	}
	from, err := openSource(ctx, src)
	if err != nil {
		return err
	}
	defer from.Close()
	fmt.Fprintf(stdout, "copying %s into %s\n", src, dst)
	var counts []store.CopyCount
	fill := func(db *store.DB) error {
		loader, ok := db.Engine().(store.Loader)
		if !ok {
			return fmt.Errorf("%s: the engine cannot take a copy", dst.flag)
		}
		c, err := store.Copy(ctx, from.(store.Dumper), loader, func(p store.CopyProgress) {
			switch {
			case p.Finished:
				fmt.Fprintf(stdout, "  %-22s %12d copied\n", p.Kind, p.Done)
			case p.Done > 0:
				fmt.Fprintf(stdout, "  %-22s %12d of %d\n", p.Kind, p.Done, p.Total)
			}
		})
		counts = c
		return err
	}
	if dst.pg != nil {
		err = fillPostgres(ctx, dst, fill)
	} else {
		err = boltstore.CreateFile(ctx, dst.path, store.Options{}, fill)
	}
	if len(counts) > 0 {
		printCounts(stdout, counts)
	}
	switch {
	case errors.Is(err, store.ErrNotEmpty):
		return fmt.Errorf("-to %s must hold no record, and holds some (%v): copy into a new file or an empty database",
			dst, strings.TrimPrefix(err.Error(), store.ErrNotEmpty.Error()+": "))
	case errors.Is(err, store.ErrOutdated), errors.Is(err, store.ErrNewerStore):
		return fmt.Errorf("-from %s: %w", src, err)
	case errors.Is(err, store.ErrCountMismatch):
		return fmt.Errorf("%w; %s keeps nothing of the copy", err, dst)
	case err != nil:
		return err
	}
	fmt.Fprintf(stdout, "%s now holds every record of %s. Media bytes are not records: they stay in the media "+
		"directory (media.dir, by default dataDir/media) or the bucket of media.s3, which the fleetcam using the copy "+
		"must have as well (fleetcam store copy -media copies a directory into a bucket).\n", dst, src)
	return nil
}

// openSource opens the store to copy from without changing it: a bbolt
// file read-only, a database as it is (it must be migrated already).
func openSource(ctx context.Context, src storeLocation) (store.Engine, error) {
	if src.pg != nil {
		e, err := postgres.OpenEngine(ctx, src.url, postgres.Options{MaxConns: 2})
		if err != nil {
			return nil, fmt.Errorf("-from %s: %w", src, err)
		}
		return e, nil
	}
	switch st, err := os.Stat(src.path); {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("-from %s does not exist: name an existing bbolt store file", src)
	case err != nil:
		return nil, fmt.Errorf("-from %w", err)
	case st.IsDir():
		return nil, fmt.Errorf("-from %s is a directory: name the store file in it (fleetcam.db)", src)
	}
	e, err := boltstore.OpenReadOnly(src.path, 0)
	if err != nil {
		return nil, fmt.Errorf("-from %s cannot be opened (a fleetcam running on it holds it: stop it first): %w", src, err)
	}
	return e, nil
}

// fillPostgres opens the database dst, bringing its schema up to date (an
// empty database gets it), and runs fill on it.
func fillPostgres(ctx context.Context, dst storeLocation, fill func(*store.DB) error) error {
	db, err := postgres.Open(ctx, dst.url, postgres.Options{MaxConns: 2}, store.Options{})
	if err != nil {
		return fmt.Errorf("-to %s: %w", dst, err)
	}
	return errors.Join(fill(db), db.Close())
}

// printCounts prints the records of each kind on both sides of a copy,
// marking those that differ.
func printCounts(w io.Writer, counts []store.CopyCount) {
	fmt.Fprintf(w, "%-24s %12s %12s\n", "records", "source", "destination")
	for _, c := range counts {
		mark := ""
		if c.Source != c.Destination {
			mark = "  differs"
		}
		fmt.Fprintf(w, "%-24s %12d %12d%s\n", c.Kind, c.Source, c.Destination, mark)
	}
}
