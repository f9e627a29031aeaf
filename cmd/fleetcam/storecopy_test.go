package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
	boltstore "github.com/fleetcam/fleetcam/store/bolt"
	"github.com/fleetcam/fleetcam/store/pgtest"
	"github.com/fleetcam/fleetcam/store/postgres"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// runCopy runs fleetcam store copy with args and returns its exit code,
// stdout and stderr.
func runCopy(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"store", "copy"}, args...), env{}.get, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// boltWithPartner makes a bbolt store at path holding one partner, named
// name, and returns its id.
func boltWithPartner(t *testing.T, path, name string) int64 {
	t.Helper()
	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id int64
	err = db.Update(context.Background(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		p, err := tx.CreatePartner(name)
		if err == nil {
			id = p.ID
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// partners reads the names of the partners of the store at path (a file or
// a URL) by id, and creates one more, whose id it returns as well.
func partners(t *testing.T, where string) (map[int64]string, int64) {
	t.Helper()
	var db *store.DB
	var err error
	if strings.HasPrefix(where, "postgres://") {
		db, err = postgres.Open(context.Background(), where, postgres.Options{MaxConns: 2}, store.Options{})
	} else {
		db, err = boltstore.Open(where, store.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	names := map[int64]string{}
	var next int64
	err = db.Update(context.Background(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		for id := int64(1); id <= 10; id++ {
			if p, err := tx.Partner(id); err == nil {
				names[id] = p.Name
			}
		}
		p, err := tx.CreatePartner("After the copy")
		next = p.ID
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return names, next
}

// fleetcam store copy moves a bbolt store into an empty PostgreSQL
// database and back into a new file, printing each kind and the counts of
// both sides; the partners keep their ids, and new ones come after them.
func TestStoreCopyBothWays(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "fleetcam.db")
	boltWithPartner(t, src, "Acme Telematics")
	db, err := boltstore.Open(src, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(context.Background(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		if _, err := tx.CreatePartner("Skipped"); err != nil {
			return err
		}
		_, err := tx.CreatePartner("Beta Fleet")
		return err
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	url := pgtest.Database(t, "")

	code, stdout, stderr := runCopy(t, "-from", src, "-to", url)
	if code != 0 || stderr != "" {
		t.Fatalf("copy into PostgreSQL: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^  partners +3 copied$`),
		regexp.MustCompile(`(?m)^  webhook_receivers +0 copied$`),
		regexp.MustCompile(`(?m)^records +source +destination$`),
		regexp.MustCompile(`(?m)^partners +3 +3$`),
		regexp.MustCompile(`(?m)^audit_log +3 +3$`),
		regexp.MustCompile(`dataDir/media`),
	} {
		if !want.MatchString(stdout) {
			t.Errorf("stdout lacks %s:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "differs") {
		t.Errorf("stdout marks counts that differ:\n%s", stdout)
	}

	back := filepath.Join(t.TempDir(), "data", "fleetcam.db")
	if code, stdout, stderr := runCopy(t, "-from", url, "-to", back); code != 0 || stderr != "" {
		t.Fatalf("copy back into bbolt: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	want := map[int64]string{1: "Acme Telematics", 2: "Skipped", 3: "Beta Fleet"}
	for _, where := range []string{url, back} {
		got, next := partners(t, where)
		if len(got) != len(want) {
			t.Errorf("%s holds partners %v, want %v", where, got, want)
		}
		for id, name := range want {
			if got[id] != name {
				t.Errorf("%s: partner %d is %q, want %q", where, id, got[id], name)
			}
		}
		if next != 4 {
			t.Errorf("%s: the partner created after the copy got id %d, want 4", where, next)
		}
	}
}

// Each refusal is one line on stderr that names the flag and the rule,
// exits 1 and leaves the destination as it was.
func TestStoreCopyRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "fleetcam.db")
	boltWithPartner(t, src, "Source")
	full := filepath.Join(dir, "full.db")
	boltWithPartner(t, full, "Already here")
	fullDB := pgtest.Database(t, "")
	db, err := postgres.Open(context.Background(), fullDB, postgres.Options{MaxConns: 2}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(context.Background(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		_, err := tx.CreatePartner("Already here")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	old := filepath.Join(dir, "old.db")
	boltWithPartner(t, old, "Old")
	e, err := boltstore.OpenEngine(old, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Update(context.Background(), func(rec store.Records) error { return rec.SetSchemaVersion(store.Version() - 1) }); err != nil {
		t.Fatal(err)
	}
	e.Close()
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(src, link); err != nil {
		t.Fatal(err)
	}
	newFile := filepath.Join(dir, "new.db")

	for _, c := range []struct {
		name string
		args []string
		want *regexp.Regexp
	}{
		{"no -from", []string{"-to", newFile}, regexp.MustCompile(`^-from is required`)},
		{"no -to", []string{"-from", src}, regexp.MustCompile(`^-to is required`)},
		{"same file", []string{"-from", src, "-to", src}, regexp.MustCompile(`^-from and -to name the same store`)},
		{"same file by a link", []string{"-from", src, "-to", link}, regexp.MustCompile(`^-from and -to name the same store`)},
		{"same database", []string{"-from", fullDB, "-to", fullDB + "&application_name=copy"},
			regexp.MustCompile(`^-from and -to name the same store`)},
		{"missing source", []string{"-from", filepath.Join(dir, "none.db"), "-to", newFile},
			regexp.MustCompile(`^-from .*none\.db does not exist`)},
		{"source directory", []string{"-from", dir, "-to", newFile}, regexp.MustCompile(`^-from .* is a directory`)},
		{"destination directory", []string{"-from", src, "-to", dir}, regexp.MustCompile(`^-to .* is a directory`)},
		{"not a postgres URL", []string{"-from", src, "-to", "mysql://db.example/fleetcam"},
			regexp.MustCompile(`^-to must be a bbolt store file or a postgres:// or postgresql:// URL, not a mysql:// URL`)},
		{"bad URL", []string{"-from", src, "-to", "postgres://fleetcam:PASSWORD@db.example:port/fleetcam"},
			regexp.MustCompile(`^-to must be a valid PostgreSQL URL`)},
		{"unreachable source", []string{"-from", "postgres://fleetcam:PASSWORD@127.0.0.1:1/fleetcam?connect_timeout=2", "-to", newFile},
			regexp.MustCompile(`^-from PostgreSQL database fleetcam on 127\.0\.0\.1:1: `)},
		{"file with records", []string{"-from", src, "-to", full},
			regexp.MustCompile(`^-to .*full\.db must hold no record, and holds some \(.*1 partners\)`)},
		{"database with records", []string{"-from", src, "-to", fullDB},
			regexp.MustCompile(`^-to PostgreSQL database .* must hold no record, and holds some \(1 partners\)`)},
		{"outdated source", []string{"-from", old, "-to", newFile},
			regexp.MustCompile(`^-from .*old\.db: .*run fleetcam migrate on it first`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCopy(t, c.args...)
			msg := strings.TrimPrefix(stderr, "fleetcam: ")
			if code != 1 || strings.Count(stderr, "\n") != 1 || !c.want.MatchString(msg) {
				t.Errorf("exit %d, stderr %q, want 1 and one line matching %s", code, stderr, c.want)
			}
			if strings.Contains(stderr, "PASSWORD") {
				t.Errorf("stderr shows a password: %q", stderr)
			}
		})
	}
	if _, err := os.Stat(newFile); !os.IsNotExist(err) {
		t.Errorf("a refused copy left %s behind (%v)", newFile, err)
	}
	if got, _ := partners(t, full); len(got) != 1 || got[1] != "Already here" {
		t.Errorf("the refused destination file holds %v, want its own partner alone", got)
	}
	if got, _ := partners(t, fullDB); len(got) != 1 || got[1] != "Already here" {
		t.Errorf("the refused destination database holds %v, want its own partner alone", got)
	}
}

// fleetcam store copy into PostgreSQL leaves hourly event counts equal to
// what the copied events themselves count, per organization, hour and
// type, so that the organization pages' totals are those of the copy.
func TestStoreCopyCountsEventsByHour(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "fleetcam.db")
	db, err := boltstore.Open(src, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	types := []string{"deceleration", "button", "acceleration"}
	err = db.Update(context.Background(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		p, err := tx.CreatePartner("Acme Telematics")
		if err != nil {
			return err
		}
		for o, imei := range []string{"356938035643809", "356938035643817"} {
			org, err := tx.CreateOrganization(p.ID, fmt.Sprintf("Fleet %d", o), nil)
			if err != nil {
				return err
			}
			dev := &store.Device{IMEI: imei, Name: imei, OrganizationID: org.ID, PartnerID: p.ID, Status: store.DeviceActivated}
			if err := tx.AddDevice(dev); err != nil {
				return err
			}
			for i := range 300 {
				// 300 events 7 minutes 13 seconds apart: 36 hours, some
				// in the hour's first second.
				at := t0.Add(time.Duration(i) * (7*time.Minute + 13*time.Second))
				if i%25 == 0 {
					at = at.Truncate(time.Hour)
				}
				_, err := tx.IngestEvent(dev, store.EventInput{DeviceEventID: fmt.Sprint(i), Type: types[(i+o)%len(types)], Time: at})
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	url := pgtest.Database(t, "")
	if code, stdout, stderr := runCopy(t, "-from", src, "-to", url); code != 0 || stderr != "" {
		t.Fatalf("copy into PostgreSQL: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	kept, stored := storetest.PostgresHourCounts(t, conn)
	var total int64
	for _, n := range stored {
		total += n
	}
	if total != 600 || !maps.Equal(kept, stored) {
		t.Errorf("after the copy the hourly counts are %v, the %d copied events count %v", kept, total, stored)
	}
	if kept, stored := storetest.PostgresDeviceDayCounts(t, conn); len(stored) == 0 || !maps.Equal(kept, stored) {
		t.Errorf("after the copy the devices' daily counts are %v, the copied events count %v", kept, stored)
	}
}
