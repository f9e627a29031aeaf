// Command fleetbench measures fleetcam on one machine, over loopback only,
// and prints a result table per part:
//
//	hold        10,000 authenticated devices with persistent sessions: server
//	            RSS and Go heap per connected device, connect(+auth) rate
//	ingest      GPS and events at a sustained rate from 1,000 devices (QoS 1):
//	            persisted samples/s, ack p50/p99; GPS batches; closed-loop
//	            maximum of durable QoS 1 msgs/s from 100 devices
//	webhook     device publish → signed webhook delivery p50/p99 at a local
//	            receiver that verifies every signature
//	api         100-event pages of POST /v2/organizations/{orgId}/events and
//	            GET /v2/devices/{imei}/events with 1,000,000 events stored and
//	            ingest running; start-up time with that store
//	baseline    the same QoS 1 loads against Debian's mosquitto (persistence
//	            on), for fleetcam / mosquitto ratios from the same run
//	durability  kill -9 under load, five times: every acknowledged message
//	            must be in the store after the restart
//	purge       the retention purge of the oldest day of a store holding a
//	            few days of GPS samples and events, timed in this process
//	media       100 devices upload 1 MB clips through fleetcam's upload
//	            URLs, then every clip is downloaded by its link: throughput
//	            and latency with media in a directory and in a bucket of a
//	            versitygw server it starts (tools/s3gateway, which make
//	            test-deps-versitygw builds), side by side
//	cluster     (-cluster N, alone) N fleetcam nodes on PostgreSQL and a NATS
//	            server in this process, 1,000 devices spread over them:
//	            connect rate, durable closed loop, commands across nodes,
//	            publish → webhook, and kill -9 of one node: time until its
//	            devices reconnected and serve, messages and webhooks lost
//
// fleetcam runs as a child process (its RSS is read from /proc), the
// simulated devices (devicesim's load mode) and the webhook receiver run in
// this process. Every part stops by itself; -quick runs a tiny version of
// each, for tests.
//
// With -postgres, every part but the baseline (no fleetcam) and media
// (bbolt only: the records' engine does not matter to media bytes) runs
// twice, on bbolt and then on PostgreSQL, each fleetcam start on a database
// of its own, and the report sets the figures of both engines side by side.
// -postgres auto starts a PostgreSQL server of its own in the work directory.
//
// Usage:
//
//	fleetbench [-fleetcam bin/fleetcam] [-part all|hold,ingest,…] [-quick] [-runs 3]
//	           [-postgres auto|URL] [-cluster N] [-events N] [-profile] [-work DIR] [-keep] [-json FILE] [-timeout 20m]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// allParts lists the parts in the order they run.
var allParts = []string{"hold", "ingest", "webhook", "api", "baseline", "durability", "purge", "media"}

// options are the command-line settings.
type options struct {
	fleetcam, mosquitto, work, jsonPath string
	// postgres is -postgres: "", "auto" or the URL of a server.
	postgres             string
	parts                []string
	quick, keep, profile bool
	runs                 int
	timeout, commitDelay time.Duration
	// cluster is -cluster: the nodes of the cluster part, 0 without it.
	cluster int
	// events is -events: the events the api part seeds, 0 for its scale's.
	events int
}

func parseOptions(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("fleetbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.fleetcam, "fleetcam", "bin/fleetcam", "fleetcam binary to benchmark (make build)")
	fs.StringVar(&o.mosquitto, "mosquitto", "", "mosquitto binary for the baseline; default: mosquitto on PATH or /usr/sbin/mosquitto")
	part := fs.String("part", "all", "parts to run, comma-separated: all or "+strings.Join(allParts, ","))
	fs.BoolVar(&o.quick, "quick", false, "tiny version of every part (seconds), for tests; fleetcam on PostgreSQL keeps six connections (store.maxConns)")
	fs.IntVar(&o.runs, "runs", 3, "measurement windows per steady-state figure; the median is reported")
	fs.BoolVar(&o.profile, "profile", false, "save a CPU profile of fleetcam for every measured load in the work directory")
	fs.StringVar(&o.work, "work", "", "work directory (stores, logs, profiles); default a temporary one")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory")
	fs.StringVar(&o.jsonPath, "json", "", "also write every figure to this JSON file")
	fs.DurationVar(&o.timeout, "timeout", 20*time.Minute, "stop everything after this long (default 2h with -postgres, whose seeding is slow)")
	fs.DurationVar(&o.commitDelay, "commit-delay", -1, "run fleetcam with this mqtt.commitDelay (default: its configured default)")
	fs.StringVar(&o.postgres, "postgres", "", "also run every part on PostgreSQL: auto (start a server in the work directory) or the libpq URL of a server the bench may create databases on")
	fs.IntVar(&o.events, "events", 0, "events the api part seeds (default 1,000,000, 3,000 with -quick)")
	fs.IntVar(&o.cluster, "cluster", 0, "run only the cluster part with this many fleetcam nodes (2 to 9) on PostgreSQL (-postgres, default auto) and a NATS server in this process")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.cluster != 0 {
		if o.cluster < 2 || o.cluster > 9 {
			return nil, fmt.Errorf("-cluster %d must be from 2 to 9 nodes", o.cluster)
		}
		if o.postgres == "" {
			o.postgres = "auto"
		}
		*part = "cluster"
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.postgres != "" {
		timed := false
		fs.Visit(func(f *flag.Flag) { timed = timed || f.Name == "timeout" })
		if !timed {
			o.timeout = 2 * time.Hour
		}
	}
	if o.events < 0 {
		return nil, fmt.Errorf("-events %d must not be negative", o.events)
	}
	if o.runs < 1 || o.runs > 20 {
		return nil, fmt.Errorf("-runs %d must be from 1 to 20", o.runs)
	}
	if o.timeout <= 0 {
		return nil, fmt.Errorf("-timeout must be positive")
	}
	for _, p := range strings.Split(*part, ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "all":
			o.parts = append(o.parts, allParts...)
		case p == "cluster" && o.cluster != 0:
			o.parts = append(o.parts, p)
		case slices.Contains(allParts, p):
			o.parts = append(o.parts, p)
		default:
			return nil, fmt.Errorf("-part %q: must be all or one of %s", p, strings.Join(allParts, ", "))
		}
	}
	if o.postgres != "" {
		if _, err := checkPostgresFlag(o.postgres); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(o.fleetcam); err != nil {
		return nil, fmt.Errorf("-fleetcam %s: %w (build it with make build)", o.fleetcam, err)
	}
	return o, nil
}

// bench is one run of fleetbench.
type bench struct {
	o      *options
	sc     scale
	rep    *report
	log    io.Writer // progress
	work   string
	serial int
	// engine is the storage engine the running part's fleetcam uses;
	// engines are those every part runs on, in turn.
	engine  string
	engines []string
	pg      *pgServer // with -postgres
	// pgParts counts the parts of the run on PostgreSQL; pgTemplate is
	// the migrated database their databases are copies of, once a part
	// made it (migrated).
	pgParts    int
	pgTemplate storage
	// Figures the baseline compares against, from the same run.
	holdResult    *connectedFleet
	holdRSS       int64
	ingestResults []loadResult
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleetbench: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	work := o.work
	if work == "" {
		if work, err = os.MkdirTemp("", "fleetbench-"); err != nil {
			fmt.Fprintf(stderr, "fleetbench: %v\n", err)
			return 1
		}
		if !o.keep {
			defer os.RemoveAll(work)
		}
		// PostgreSQL (-postgres auto) runs as its own user when this is root.
		if err := os.Chmod(work, 0o755); err != nil {
			fmt.Fprintf(stderr, "fleetbench: %v\n", err)
			return 1
		}
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		fmt.Fprintf(stderr, "fleetbench: -work: %v\n", err)
		return 1
	}
	b := &bench{o: o, sc: fullScale, log: stderr, work: work, rep: &report{w: stdout, started: time.Now()},
		engines: []string{engineBolt}}
	if o.quick {
		b.sc = quickScale
	}
	if o.events > 0 {
		b.sc.apiEvents = o.events
	}
	if o.postgres != "" {
		if b.pg, err = startPostgres(ctx, o.postgres, work, o.keep, o.profile, stderr); err != nil {
			fmt.Fprintf(stderr, "fleetbench: %v\n", err)
			return 2
		}
		defer func() {
			if err := b.closePostgres(context.WithoutCancel(ctx)); err != nil {
				fmt.Fprintf(stderr, "fleetbench: PostgreSQL: %v\n", err)
			}
		}()
		b.engines = append(b.engines, enginePostgres)
		b.rep.engines = true
	}
	b.header(stdout)
	parts := slices.Compact(o.parts)
	for _, p := range parts {
		if slices.Contains(b.enginesOf(p), enginePostgres) {
			b.pgParts++
		}
	}
	failed := false
	for _, p := range parts {
		for _, e := range b.enginesOf(p) {
			b.engine, b.rep.engine = e, e
			what := p
			if len(b.engines) > 1 && p != "baseline" && p != "cluster" {
				what += " on " + engineTitle(e)
			}
			fmt.Fprintf(stderr, "fleetbench: part %s\n", what)
			if err := b.part(ctx, p); err != nil {
				failed = true
				fmt.Fprintf(stderr, "fleetbench: part %s failed: %v\n", what, err)
				fmt.Fprintf(stdout, "\n%s: FAILED: %v\n", what, err)
			}
			if ctx.Err() != nil {
				break
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	b.rep.engine = ""
	b.rep.compare()
	b.rep.summary()
	if o.jsonPath != "" {
		if err := b.rep.writeJSON(o.jsonPath); err != nil {
			fmt.Fprintf(stderr, "fleetbench: -json: %v\n", err)
			failed = true
		}
	}
	if o.keep {
		fmt.Fprintf(stderr, "fleetbench: work directory kept: %s\n", work)
	}
	if failed || ctx.Err() != nil {
		return 1
	}
	return 0
}

// enginesOf returns the engines part p runs on, in turn.
func (b *bench) enginesOf(p string) []string {
	switch p {
	case "baseline":
		return []string{"mosquitto"}
	case "cluster":
		return []string{enginePostgres}
	case "media":
		return b.engines[:1] // the records' engine does not matter to media bytes
	}
	return b.engines
}

func (b *bench) part(ctx context.Context, p string) error {
	switch p {
	case "hold":
		return b.hold(ctx)
	case "ingest":
		return b.ingest(ctx)
	case "webhook":
		return b.webhook(ctx)
	case "api":
		return b.api(ctx)
	case "baseline":
		return b.baseline(ctx)
	case "durability":
		return b.durability(ctx)
	case "purge":
		return b.purge(ctx)
	case "cluster":
		return b.cluster(ctx)
	case "media":
		return b.media(ctx)
	}
	return fmt.Errorf("unknown part %q", p)
}

// header prints the machine and the run's settings.
func (b *bench) header(w io.Writer) {
	load, _ := os.ReadFile("/proc/loadavg")
	mode := "full"
	if b.o.quick {
		mode = "quick"
	}
	fmt.Fprintf(w, "fleetbench (%s) %s\n", mode, time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "  machine   %d CPUs, %s, %s memory, load average %s\n", runtime.NumCPU(), cpuModel(),
		memTotal(), strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "))
	fmt.Fprintf(w, "  fleetcam  %s\n", b.o.fleetcam)
	fmt.Fprintf(w, "  go        %s; windows per figure %d (median reported)\n", runtime.Version(), b.o.runs)
	switch {
	case b.o.cluster != 0:
		fmt.Fprintf(w, "  engines   PostgreSQL, for the %d nodes of the cluster part\n", b.o.cluster)
	case b.pg != nil:
		fmt.Fprintf(w, "  engines   bbolt, then PostgreSQL for every part but the baseline and media (bbolt only)\n")
	}
	if b.pg != nil {
		fmt.Fprintf(w, "  postgres  %s\n", b.pg.describe())
	}
}

// dir returns a fresh directory under the work directory.
func (b *bench) dir(name string) string {
	b.serial++
	d := filepath.Join(b.work, fmt.Sprintf("%02d-%s", b.serial, name))
	os.MkdirAll(d, 0o755)
	return d
}

// start runs fleetcam on st, logging into the work directory.
func (b *bench) start(ctx context.Context, st storage) (*server, error) {
	return b.startWith(ctx, st, b.o.profile)
}

// startWith is start with the profile endpoints on or off.
func (b *bench) startWith(ctx context.Context, st storage, pprof bool) (*server, error) {
	return startServer(ctx, serverOptions{bin: b.o.fleetcam, dataDir: st.dataDir, postgresURL: st.pgURL, maxConns: b.sc.pgMaxConns,
		logPath: st.dataDir + ".log", pprof: pprof, commitDelay: b.o.commitDelay})
}

// profile saves a CPU profile of srv over d under name, when -profile is
// set, and on PostgreSQL the statements the server spent its time on.
func (b *bench) profile(ctx context.Context, srv *server, d time.Duration, name string) {
	if !b.o.profile {
		return
	}
	if len(b.engines) > 1 {
		name += "-" + b.engine
	}
	if b.engine == enginePostgres {
		go b.pg.statements(ctx, d, filepath.Join(b.work, name+"-statements.txt"), b.log)
	}
	go func() {
		path := filepath.Join(b.work, name+".pprof")
		if err := srv.profile(ctx, d, path); err != nil {
			fmt.Fprintf(b.log, "fleetbench: profile %s: %v\n", name, err)
			return
		}
		fmt.Fprintf(b.log, "fleetbench: CPU profile %s (go tool pprof -top %s %s)\n", path, b.o.fleetcam, path)
	}()
	go b.profileSelf(ctx, d, name)
}

// profileSelf writes a CPU profile of this process (the simulated devices
// and the webhook receiver) over the same window as the server's.
func (b *bench) profileSelf(ctx context.Context, d time.Duration, name string) {
	path := filepath.Join(b.work, name+"-load.pprof")
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(b.log, "fleetbench: profile %s: %v\n", name, err)
		return
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(b.log, "fleetbench: profile %s: %v\n", name, err)
		return
	}
	_ = sleep(ctx, d)
	pprof.StopCPUProfile()
	fmt.Fprintf(b.log, "fleetbench: CPU profile of the load generator %s\n", path)
}

func cpuModel() string {
	raw, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func memTotal() string {
	raw, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
			return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	return "unknown"
}

// lookMosquitto finds the mosquitto binary, or returns "".
func lookMosquitto(flagged string) string {
	if flagged != "" {
		return flagged
	}
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/mosquitto"); err == nil {
		return "/usr/sbin/mosquitto"
	}
	return ""
}
