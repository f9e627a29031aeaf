package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/internal/testshared"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/pgtest"
	"github.com/jackc/pgx/v5"
)

// fleetcamBuilt is the server the bench runs as a child process, built
// once per test binary; TestMain removes it.
var fleetcamBuilt = testshared.Build("github.com/fleetcam/fleetcam/cmd/fleetcam")

// buildFleetcam returns the server the bench runs as a child process,
// built the first time a test asks for it.
func buildFleetcam(t *testing.T) string {
	t.Helper()
	return fleetcamBuilt.Get(t).Path
}

// quickReport is the JSON report of a quick run.
type quickReport struct {
	raw     []byte
	stdout  string
	stderr  string             // the progress
	got     map[string]float64 // engine/part/name → value
	skipped map[string]string
}

// quickPatience bounds a quick run: a few minutes on a busy two-core
// machine, ending as soon as the run does.
const quickPatience = 15 * time.Minute

// runQuick runs fleetbench -quick -runs 1 with args against a real
// fleetcam child process and reads its JSON report.
func runQuick(t *testing.T, bin string, limit time.Duration, args ...string) *quickReport {
	t.Helper()
	dir := t.TempDir()
	// PostgreSQL (-postgres auto) runs as its own user when the tests run
	// as root, and keeps its data under the work directory.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	jsonPath := filepath.Join(dir, "results.json")
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var stdout, stderr bytes.Buffer
	began := time.Now()
	args = append([]string{"-quick", "-runs", "1", "-fleetcam", bin, "-work", filepath.Join(dir, "work"), "-json", jsonPath}, args...)
	if code := run(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("quick bench %v took %s", args[9:], time.Since(began).Round(time.Millisecond))
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Results []result          `json:"results"`
		Skipped map[string]string `json:"skipped"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	q := &quickReport{raw: raw, stdout: stdout.String(), stderr: stderr.String(), got: map[string]float64{}, skipped: rep.Skipped}
	for _, r := range rep.Results {
		if r.Engine == "" {
			t.Errorf("figure %s/%s names no engine", r.Part, r.Name)
		}
		q.got[r.Engine+"/"+r.Part+"/"+r.Name] = r.Value
	}
	return q
}

// between checks that figure key (engine/part/name) is from lo to hi.
func (q *quickReport) between(t *testing.T, key string, lo, hi float64) {
	t.Helper()
	v, ok := q.got[key]
	if !ok {
		t.Errorf("no figure %s in %s", key, q.raw)
		return
	}
	if v < lo || v > hi {
		t.Errorf("%s = %g, want %g to %g", key, v, lo, hi)
	}
}

// measured checks that figure key (engine/part/name), a rate, a latency or
// a duration, was measured: a positive number. How large it is depends on
// the machine and on what else runs on it, so the test logs it instead of
// judging it; the bench's own report sets it against its target.
func (q *quickReport) measured(t *testing.T, key string) {
	t.Helper()
	v, ok := q.got[key]
	if !ok {
		t.Errorf("no figure %s in %s", key, q.raw)
		return
	}
	if !(v > 0) || math.IsInf(v, 0) {
		t.Errorf("%s = %g, want a positive measurement", key, v)
		return
	}
	t.Logf("%s = %.4g", key, v)
}

// checkEngine checks the figures of every fleetcam part on engine.
func (q *quickReport) checkEngine(t *testing.T, engine string) {
	t.Helper()
	sc := quickScale
	e := engine + "/"
	q.between(t, e+"hold/devices_online", float64(sc.holdDevices), float64(sc.holdDevices))
	q.measured(t, e+"hold/connect_rate")
	q.between(t, e+"hold/rss_per_device", 1, 10_000)
	q.between(t, e+"hold/heap_per_device", 0.1, 1000)
	// Offered: 40 devices × (5 GPS messages + 0.5 events) per second. What
	// a window acknowledges also depends on the backlog the devices built
	// up while they connected, and so on how busy the machine was: it is
	// logged beside what was offered.
	offered := float64(sc.ingestDevices) * (sc.sustainedGPS + sc.sustainedEvents)
	q.measured(t, e+"ingest/sustained_msgs_per_s")
	t.Logf("%singest: %g msgs/s offered", e, offered)
	q.measured(t, e+"ingest/sustained_ack_p99")
	q.measured(t, e+"ingest/gps_fixes_per_s")
	q.measured(t, e+"ingest/closed_loop_msgs_per_s")
	q.between(t, e+"webhook/bad_signatures", 0, 0)
	if acked, delivered := q.got[e+"webhook/acked_at_10_per_s"], q.got[e+"webhook/delivered_at_10_per_s"]; acked < 1 || delivered != acked {
		t.Errorf("webhook on %s: %g events acknowledged, %g delivered", engine, acked, delivered)
	}
	q.measured(t, e+"webhook/p99_at_10_per_s")
	q.measured(t, e+"api/startup_seconds")
	q.measured(t, e+"api/device_events_p99")
	q.measured(t, e+"api/org_events_p99")
	q.between(t, e+"durability/acked_messages_lost", 0, 0)
	q.between(t, e+"durability/acked_messages_checked", 10, 1e9)
	perDay := float64(sc.purgeDevices) * float64(24*time.Hour/sc.purgeGPSEvery)
	q.between(t, e+"purge/day_gps_samples", perDay, perDay)
	q.measured(t, e+"purge/day_purge_seconds")
}

// TestQuickBenchReportsBothEngines runs every part at its tiny scale
// against a real fleetcam child process, on bbolt and on a PostgreSQL
// server the bench starts itself (-postgres auto), and checks the figures
// of both, the tables naming their engine and the side-by-side comparison.
func TestQuickBenchReportsBothEngines(t *testing.T) {
	q := runQuick(t, buildFleetcam(t), quickPatience, "-postgres", "auto")
	q.checkEngine(t, engineBolt)
	q.checkEngine(t, enginePostgres)
	if _, ok := q.got["postgres/ingest/closed_loop_vs_bbolt"]; !ok {
		t.Errorf("no closed-loop ratio of PostgreSQL to bbolt in %s", q.raw)
	}
	if _, ok := q.got["postgres/purge/day_purge_seconds"]; !ok || !strings.Contains(q.stdout, "day_purge_seconds") {
		t.Errorf("no purge target on PostgreSQL:\n%s", q.stdout)
	}
	if _, skipped := q.skipped["baseline"]; !skipped {
		q.measured(t, "mosquitto/baseline/mosquitto_closed_loop_msgs_per_s")
	} else if !strings.Contains(q.stdout, "baseline: skipped: mosquitto is not installed") {
		t.Errorf("baseline skipped without saying why:\n%s", q.stdout)
	}
	for _, title := range []string{"1. Connection hold", "2. Ingest", "3. Event → webhook", "4. Event API", "6. Durability", "7. Retention purge"} {
		for _, engine := range []string{"bbolt", "PostgreSQL"} {
			if !strings.Contains(q.stdout, title) || !regexp.MustCompile(regexp.QuoteMeta(title)+`.*— on `+engine).MatchString(q.stdout) {
				t.Errorf("report lacks %q on %s:\n%s", title, engine, q.stdout)
			}
		}
	}
	// The comparison: a row per figure measured on both, with the ratio.
	row := regexp.MustCompile(`(?m)^\s+purge\s+day_gps_samples\s+(\d+) samples\s+(\d+) samples\s+1\.00×$`)
	if !strings.Contains(q.stdout, "bbolt beside PostgreSQL") || !row.MatchString(q.stdout) {
		t.Errorf("report lacks the side-by-side comparison:\n%s", q.stdout)
	}
	if !strings.Contains(q.stdout, "postgres  postgres://fleetcam@127.0.0.1:") {
		t.Errorf("report header does not name the PostgreSQL server:\n%s", q.stdout)
	}
	// Every part's database on PostgreSQL is a copy of one the run
	// migrated once.
	if n := strings.Count(q.stderr, "  migrated "+migratedDatabase); n != 1 {
		t.Errorf("%s migrated %d times, want once:\n%s", migratedDatabase, n, q.stderr)
	}
	// The seeded stores of the event pages and the purge are settled
	// before they are measured, checkpoint and all.
	if n := strings.Count(q.stderr, "vacuumed, analysed and checkpointed the seeded store"); n != 2 {
		t.Errorf("%d seeded stores settled with a checkpoint, want 2 (api, purge):\n%s", n, q.stderr)
	}
}

// TestQuickBenchOnBboltAlone runs a part without -postgres: one engine,
// tables without an engine in their titles, no comparison. The purge is
// the cheapest part with a table (it starts no fleetcam) and a table and
// figures are what this test is about: every part names its engine the
// same way (report.table), and TestQuickBenchReportsBothEngines runs and
// checks every part on bbolt.
func TestQuickBenchOnBboltAlone(t *testing.T) {
	q := runQuick(t, buildFleetcam(t), quickPatience, "-part", "purge")
	perDay := float64(quickScale.purgeDevices) * float64(24*time.Hour/quickScale.purgeGPSEvery)
	q.between(t, "bbolt/purge/day_gps_samples", perDay, perDay)
	q.measured(t, "bbolt/purge/day_purge_seconds")
	for key := range q.got {
		if !strings.HasPrefix(key, "bbolt/") {
			t.Errorf("figure %s without -postgres", key)
		}
	}
	if !strings.Contains(q.stdout, "7. Retention purge") {
		t.Errorf("report lacks the purge table:\n%s", q.stdout)
	}
	if strings.Contains(q.stdout, "— on ") || strings.Contains(q.stdout, "beside PostgreSQL") {
		t.Errorf("a run on one engine names engines:\n%s", q.stdout)
	}
}

// TestQuickBenchMedia runs the media part: every clip uploaded and
// downloaded with media in a directory and in a bucket of a versitygw
// server the bench starts, the bucket's downloads by redirect.
func TestQuickBenchMedia(t *testing.T) {
	q := runQuick(t, buildFleetcam(t), quickPatience, "-part", "media")
	clips := float64(mediaQuick.devices * mediaQuick.clipsPerDevice)
	for _, store := range []string{"dir", "s3"} {
		q.between(t, "bbolt/media/"+store+"_clips", clips, clips)
		q.measured(t, "bbolt/media/"+store+"_upload_mb_per_s")
		q.measured(t, "bbolt/media/"+store+"_download_p99")
	}
	q.between(t, "bbolt/media/dir_redirected", 0, 0)
	q.between(t, "bbolt/media/s3_redirected", clips, clips)
	if !strings.Contains(q.stdout, "8. Media") || !strings.Contains(q.stdout, "S3 (versitygw)") {
		t.Errorf("report lacks the media table:\n%s", q.stdout)
	}
}

// TestQuickBenchCluster runs -cluster 3 against three real fleetcam
// child processes on a PostgreSQL server of its own: every figure of the
// part, nothing acknowledged lost, every webhook delivered, and the
// moved devices reconnected and serving after the kill.
func TestQuickBenchCluster(t *testing.T) {
	q := runQuick(t, buildFleetcam(t), quickPatience, "-cluster", "3")
	q.measured(t, "postgres/cluster/connect_per_s")
	q.measured(t, "postgres/cluster/connect_one_bbolt_node_per_s")
	q.measured(t, "postgres/cluster/connect_vs_one_bbolt_node")
	q.measured(t, "postgres/cluster/closed_loop_msgs_per_s")
	q.measured(t, "postgres/cluster/command_p99")
	q.measured(t, "postgres/cluster/publish_to_webhook_p99")
	// The bench waits for the moved devices for up to two minutes each
	// time, and fails when they are not back and serving by then.
	q.measured(t, "postgres/cluster/failover_reconnected_s")
	q.measured(t, "postgres/cluster/failover_serving_s")
	q.between(t, "postgres/cluster/acked_lost", 0, 0)
	q.between(t, "postgres/cluster/webhook_lost", 0, 0)
	// No device is disconnected for the nodes' own contention; the other
	// counts are logged.
	q.between(t, "postgres/cluster/conflicts_expired", 0, 0)
	q.between(t, "postgres/cluster/conflicts_retried", 0, math.Inf(1))
	q.between(t, "postgres/cluster/store_errors", 0, math.Inf(1))
	for key := range q.got {
		if !strings.HasPrefix(key, "postgres/cluster/") {
			t.Errorf("figure %s in a -cluster run", key)
		}
	}
	if !strings.Contains(q.stdout, "8. Cluster: 3 nodes") {
		t.Errorf("report lacks the cluster table:\n%s", q.stdout)
	}
	// The one database of the run is migrated in place, not copied.
	if strings.Contains(q.stderr, "  migrated "+migratedDatabase) {
		t.Errorf("a run with one part on PostgreSQL migrated a database to copy:\n%s", q.stderr)
	}
}

// engines returns a fresh storage on each engine: bbolt in a temporary
// directory, PostgreSQL in a database of the test binary's server.
func engines(t *testing.T) []storage {
	return []storage{
		{engine: engineBolt, dataDir: t.TempDir()},
		{engine: enginePostgres, dataDir: t.TempDir(), pgURL: pgtest.Database(t, "")},
	}
}

// The durability check finds an acknowledged message the store lacks, on
// either engine.
func TestVerifyAcksCountsMissingMessages(t *testing.T) {
	for _, st := range engines(t) {
		t.Run(st.engine, func(t *testing.T) {
			ctx := t.Context()
			fl, err := seedFleet(ctx, st, 1)
			if err != nil {
				t.Fatal(err)
			}
			at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			if err := seedEvents(ctx, fl, 1, 1, at.Add(24*time.Hour), nil); err != nil {
				t.Fatal(err)
			}
			db, err := st.open(ctx, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(ctx, store.Actor{Source: "cli"}, func(tx *store.Tx) error {
				d, err := tx.Device(fl.imeis[0])
				if err != nil {
					return err
				}
				_, err = tx.AddGPS(d, []store.GPSPoint{{Time: at, Lat: 52, Lon: 4}})
				return err
			})
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			ms := strconv.FormatInt(at.UnixMilli(), 10)
			acks := []devicesim.Ack{
				{IMEI: fl.imeis[0], Topic: protocol.TopicGPS, Key: ms},                                      // stored
				{IMEI: fl.imeis[0], Topic: protocol.TopicGPS, Key: strconv.FormatInt(at.UnixMilli()+1, 10)}, // missing
				{IMEI: fl.imeis[0], Topic: protocol.TopicEvent, Key: "L" + ms},                              // another event id at that time
			}
			lost, gps, events, err := verifyAcks(ctx, st, acks)
			if err != nil {
				t.Fatal(err)
			}
			if lost != 2 || gps != 2 || events != 1 {
				t.Fatalf("lost %d of %d GPS messages and %d events, want 2 lost", lost, gps, events)
			}
		})
	}
}

// The purge measurement's check fails on a store whose due day is still
// there, and passes once the store's purge ran with the clock at the end
// of the seeded days; on either engine.
func TestPurgeCheckNeedsTheDueDayGone(t *testing.T) {
	for _, st := range engines(t) {
		t.Run(st.engine, func(t *testing.T) {
			ctx := t.Context()
			fl, err := seedFleet(ctx, st, 2)
			if err != nil {
				t.Fatal(err)
			}
			end := time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)
			start, cutoff, every := end.AddDate(0, 0, -2), end.AddDate(0, 0, -1), time.Hour
			if err := seedGPS(ctx, fl, start, end, every); err != nil {
				t.Fatal(err)
			}
			if err := seedEvents(ctx, fl, 8, 2, end, nil); err != nil {
				t.Fatal(err)
			}
			if err := setPurgeDays(ctx, fl, 1); err != nil {
				t.Fatal(err)
			}
			err = checkPurged(ctx, st, fl.imeis, start, cutoff, end, every)
			if err == nil || !strings.Contains(err.Error(), "of the due day") {
				t.Fatalf("check before the purge: %v; want the due day found", err)
			}
			// A clock a day early makes nothing due.
			if _, _, err := timePurge(ctx, st, cutoff); err != nil {
				t.Fatal(err)
			}
			if err := checkPurged(ctx, st, fl.imeis, start, cutoff, end, every); err == nil {
				t.Fatal("check passed after a purge that had nothing due")
			}
			res, took, err := timePurge(ctx, st, end)
			if err != nil {
				t.Fatal(err)
			}
			if took <= 0 || res.Transactions == 0 {
				t.Errorf("purge took %s in %d transactions", took, res.Transactions)
			}
			if err := checkPurged(ctx, st, fl.imeis, start, cutoff, end, every); err != nil {
				t.Fatalf("after the purge: %v (deleted %v)", err, res.Deleted)
			}
		})
	}
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func TestRunRefusesBadFlags(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "fleetcam")
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	// A role that may connect but not create databases.
	admin := pgtest.Database(t, "")
	conn, err := pgx.Connect(t.Context(), admin)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(t.Context(), "DROP ROLE IF EXISTS bench_reader; CREATE ROLE bench_reader LOGIN NOCREATEDB")
	conn.Close(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	reader := strings.Replace(admin, "fleetcam@", "bench_reader@", 1)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-part", "nap"}, "-part"},
		{[]string{"-runs", "0"}, "-runs"},
		{[]string{"-events", "-1"}, "-events -1 must not be negative"},
		{[]string{"-fleetcam", "/nonexistent/fleetcam"}, "make build"},
		{[]string{"stray"}, "unexpected argument"},
		{[]string{"-fleetcam", bin, "-cluster", "1"}, "-cluster 1 must be from 2 to 9 nodes"},
		{[]string{"-fleetcam", bin, "-postgres", "mysql://root@127.0.0.1/bench"}, "-postgres \"mysql://root@127.0.0.1/bench\": must be auto or a libpq URL"},
		{[]string{"-fleetcam", bin, "-postgres", "yes"}, "must be auto or a libpq URL"},
		{[]string{"-fleetcam", bin, "-postgres", "postgres://bench:secret@127.0.0.1:0/x?sslmode=nonsense"}, "-postgres \"postgres://bench:xxxxx@"},
		{[]string{"-fleetcam", bin, "-postgres", fmt.Sprintf("postgres://bench:secret@127.0.0.1:%d/postgres?sslmode=disable", closedPort(t))}, "cannot connect"},
		{[]string{"-fleetcam", bin, "-postgres", reader}, "role bench_reader may not create databases"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr %q does not name %q", tc.args, stderr.String(), tc.want)
		}
		if lines := strings.Count(strings.TrimSpace(stderr.String()), "\n") + 1; lines != 1 {
			t.Errorf("%v: %d lines on stderr, want one:\n%s", tc.args, lines, stderr.String())
		}
		if strings.Contains(stderr.String(), "secret") {
			t.Errorf("%v: the password is on stderr: %s", tc.args, stderr.String())
		}
	}
}

// With -postgres the run may take longer unless -timeout says otherwise.
func TestPostgresRunsLonger(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "fleetcam")
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{[]string{"-fleetcam", bin}, 20 * time.Minute},
		{[]string{"-fleetcam", bin, "-postgres", "auto"}, 2 * time.Hour},
		{[]string{"-fleetcam", bin, "-postgres", "auto", "-timeout", "5m"}, 5 * time.Minute},
	} {
		o, err := parseOptions(tc.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if o.timeout != tc.want {
			t.Errorf("%v: timeout %s, want %s", tc.args, o.timeout, tc.want)
		}
	}
}
