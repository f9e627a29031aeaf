package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgStatsSettings load the statement statistics and time the WAL's writes
// and flushes, for -postgres auto -profile.
var pgStatsSettings = map[string]string{
	"shared_preload_libraries":          "pg_stat_statements",
	"pg_stat_statements.track_planning": "on",
	"track_io_timing":                   "on",
	"track_wal_io_timing":               "on",
}

// statements resets PostgreSQL's statement and WAL statistics, waits d and
// writes what the server spent its time on meanwhile into path (see
// writeStats). It is -profile's view of the database side, beside
// fleetcam's CPU profile over the same window.
func (p *pgServer) statements(ctx context.Context, d time.Duration, path string, log io.Writer) {
	if !p.stats {
		return
	}
	if err := p.resetStats(ctx); err != nil {
		fmt.Fprintf(log, "fleetbench: statement statistics: %v\n", oneLine(err))
		return
	}
	began := time.Now()
	if sleep(ctx, d) != nil {
		return
	}
	p.writeStats(ctx, time.Since(began), path, log)
}

// resetStats starts the statement and WAL statistics afresh.
func (p *pgServer) resetStats(ctx context.Context) error {
	return p.exec(ctx, `SELECT pg_stat_statements_reset(), pg_stat_reset_shared('wal')`)
}

// writeStats writes into path the statements by total execution time,
// with the plans made for them and the time spent making them
// (pg_stat_statements) and the WAL's writes and flushes (pg_stat_wal)
// since resetStats, took ago.
func (p *pgServer) writeStats(ctx context.Context, took time.Duration, path string, log io.Writer) {
	conn, err := pgx.Connect(ctx, p.admin.String())
	if err != nil {
		fmt.Fprintf(log, "fleetbench: statement statistics: %v\n", oneLine(err))
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var out strings.Builder
	fmt.Fprintf(&out, "PostgreSQL over %s (pg_stat_statements, pg_stat_wal)\n\n", took.Round(time.Millisecond))
	var records, fpi, bytes, writes, syncs int64
	var writeMS, syncMS float64
	err = conn.QueryRow(ctx, `SELECT wal_records, wal_fpi, wal_bytes::bigint, wal_write, wal_sync, wal_write_time, wal_sync_time FROM pg_stat_wal`).
		Scan(&records, &fpi, &bytes, &writes, &syncs, &writeMS, &syncMS)
	if err == nil {
		fmt.Fprintf(&out, "WAL: %d records (%d full-page images), %.1f MiB, %d writes (%.0f ms), %d flushes (%.0f ms, %.2f ms each, %.0f%% of the window)\n\n",
			records, fpi, float64(bytes)/(1<<20), writes, writeMS, syncs, syncMS, syncMS/max(float64(syncs), 1), 100*syncMS/float64(max(took.Milliseconds(), 1)))
	}
	rows, err := conn.Query(ctx, `SELECT d.datname, s.calls, s.total_exec_time, s.mean_exec_time, s.plans, s.total_plan_time, s.rows,
			s.shared_blks_hit, s.shared_blks_read, regexp_replace(s.query, '\s+', ' ', 'g')
		FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
		ORDER BY s.total_exec_time DESC LIMIT 40`)
	if err != nil {
		fmt.Fprintf(log, "fleetbench: statement statistics: %v\n", oneLine(err))
		return
	}
	tw := tabwriter.NewWriter(&out, 0, 0, 2, ' ', tabwriter.AlignRight)
	// The statement, last, is not a cell: it is not padded.
	fmt.Fprintln(tw, "database\tcalls\ttotal ms\tmean ms\tplans\tplanning ms\trows\tblocks hit\tblocks read\t statement")
	for rows.Next() {
		var db, query string
		var calls, plans, n, hit, read int64
		var total, mean, planning float64
		if err := rows.Scan(&db, &calls, &total, &mean, &plans, &planning, &n, &hit, &read, &query); err != nil {
			rows.Close()
			fmt.Fprintf(log, "fleetbench: statement statistics: %v\n", oneLine(err))
			return
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.3f\t%d\t%.0f\t%d\t%d\t%d\t %s\n", db, calls, total, mean, plans, planning, n, hit, read, query)
	}
	rows.Close()
	tw.Flush()
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		fmt.Fprintf(log, "fleetbench: statement statistics: %v\n", err)
		return
	}
	fmt.Fprintf(log, "fleetbench: PostgreSQL statement statistics %s\n", path)
}

// waitSampler samples what the backends of one database are doing
// (pg_stat_activity: running, or waiting and on what) every few
// milliseconds until stopped: where a load's statements spend their time
// on the server, beside its own CPU. Its own backend is not counted.
type waitSampler struct {
	stop    context.CancelFunc
	done    chan struct{}
	samples int
	// states counts the backends seen in each state ("idle in
	// transaction", "Lock:transactionid (UPDATE …)"), those running or
	// waiting with the start of their statement.
	states map[string]int
}

// sampleWaits starts a sampler of the database at url; nil when it cannot
// connect (the figure is then left out).
func sampleWaits(ctx context.Context, url string) *waitSampler {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil
	}
	ctx, stop := context.WithCancel(ctx)
	w := &waitSampler{stop: stop, done: make(chan struct{}), states: map[string]int{}}
	go func() {
		defer close(w.done)
		defer conn.Close(context.WithoutCancel(ctx))
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rows, err := conn.Query(ctx, `SELECT CASE WHEN wait_event IS NULL THEN state WHEN wait_event = 'ClientRead' THEN state || ', waiting for the client'
					ELSE wait_event_type || ':' || wait_event END
					|| CASE WHEN state = 'active' THEN ' (' || left(regexp_replace(query, '\s+', ' ', 'g'), 40) || '…)' ELSE '' END
				FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`)
			if err != nil {
				return
			}
			var s string
			_, err = pgx.ForEachRow(rows, []any{&s}, func() error {
				w.states[s]++
				return nil
			})
			if err != nil {
				return
			}
			w.samples++
		}
	}()
	return w
}

// summary stops the sampler and says, for the six most frequent states,
// how many backends were in each on average, and how many samples it
// took: "active (SELECT …) 1.90, idle in transaction 1.20, …; 412
// samples" (idle backends left out). A machine whose cores are all busy
// takes fewer samples than one every 5 ms.
func (w *waitSampler) summary() string {
	if w == nil {
		return ""
	}
	w.stop()
	<-w.done
	if w.samples == 0 {
		return ""
	}
	type state struct {
		name string
		n    int
	}
	var all []state
	for name, n := range w.states {
		if name != "idle" {
			all = append(all, state{name, n})
		}
	}
	slices.SortFunc(all, func(a, b state) int { return b.n - a.n })
	var parts []string
	for _, s := range all[:min(len(all), 6)] {
		parts = append(parts, fmt.Sprintf("%s %.2f", s.name, float64(s.n)/float64(w.samples)))
	}
	return fmt.Sprintf("%s; %d samples", strings.Join(parts, ", "), w.samples)
}
