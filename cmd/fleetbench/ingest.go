package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fleetcam/fleetcam/devicesim"
)

// loadSpec is one publish load: the same spec runs against fleetcam and mosquitto.
type loadSpec struct {
	name       string
	devices    int
	gpsEvery   time.Duration // between GPS messages of a device (open loop)
	fixes      int           // fixes per GPS message
	eventEvery time.Duration
	closedLoop bool
}

// loadResult is a load's median window and what the server did meanwhile.
type loadResult struct {
	spec      loadSpec
	m         measured
	windows   []measured
	errors    int64
	skipped   int64
	srvCores  float64
	simCores  float64
	stored    float64 // messages the server counted as stored per second (fleetcam only)
	batchJobs float64 // jobs per group-commit transaction (fleetcam only)
	// trips and statements are PostgreSQL round trips and statements per
	// message stored (fleetcam on PostgreSQL only).
	trips, statements float64
}

// perUnit is what a counter of the server's metrics m0 and m1 grew by
// between them, per unit of n; 0 when n is not positive.
func perUnit(m0, m1 map[string]float64, name string, n float64) float64 {
	if n <= 0 {
		return 0
	}
	return (metricSum(m1, name) - metricSum(m0, name)) / n
}

// The PostgreSQL engine's counters of round trips and statements.
const (
	pgTripsMetric      = "fleetcam_store_postgres_round_trips_total"
	pgStatementsMetric = "fleetcam_store_postgres_statements_total"
)

// specs returns the ingest loads of the scale.
func (b *bench) specs() (sustained, batches, closed loadSpec) {
	sc := b.sc
	sustained = loadSpec{name: "sustained", devices: sc.ingestDevices,
		gpsEvery: time.Duration(float64(time.Second) / sc.sustainedGPS), fixes: 1,
		eventEvery: time.Duration(float64(time.Second) / sc.sustainedEvents)}
	batches = loadSpec{name: "gps batches", devices: sc.ingestDevices, gpsEvery: time.Second, fixes: sc.batchFixes}
	closed = loadSpec{name: "closed loop", devices: sc.closedDevices, fixes: 1, closedLoop: true}
	return
}

// runSpec connects spec.devices of imeis to url, lets the load warm up and
// measures it over -runs windows. srv is nil for a server that is not fleetcam.
func (b *bench) runSpec(ctx context.Context, url string, pid int, srv *server, imeis []string, spec loadSpec, profile string) (loadResult, error) {
	w := newWindow(spec.fixes)
	o := devicesim.LoadOptions{
		BrokerURL: url, IMEIs: imeis[:spec.devices], TokenSeed: benchTokenSeed, ConnectConcurrency: 256,
		KeepAlive: 300 * time.Second, GPSBatch: spec.fixes, ClosedLoop: spec.closedLoop, OnAck: w.ack,
		PublishTimeout: 30 * time.Second,
	}
	if !spec.closedLoop {
		o.GPSInterval = spec.gpsEvery / time.Duration(spec.fixes)
		o.EventInterval = spec.eventEvery
	}
	fr, err := startFleet(ctx, o)
	if err != nil {
		return loadResult{}, err
	}
	defer fr.stop()
	if err := fr.waitConnected(ctx, spec.devices, 2*time.Minute, b.log); err != nil {
		return loadResult{}, err
	}
	if err := sleep(ctx, b.sc.warmup); err != nil {
		return loadResult{}, err
	}
	var m0 map[string]float64
	if srv != nil {
		m0, _ = srv.metrics()
		if profile != "" {
			b.profile(ctx, srv, time.Duration(b.o.runs)*b.sc.window, profile)
		}
	}
	s0 := fr.stats.Snapshot()
	cpu := startCPU(pid)
	windows, err := measure(ctx, w, b.o.runs, b.sc.window)
	if err != nil {
		return loadResult{}, err
	}
	r := loadResult{spec: spec, windows: windows, m: medianMeasured(windows)}
	r.srvCores, r.simCores = cpu.cores()
	s1 := fr.stats.Snapshot()
	r.errors = s1.Errors() - s0.Errors()
	r.skipped = s1.Skipped - s0.Skipped
	if srv != nil {
		m1, _ := srv.metrics()
		var took time.Duration
		for _, x := range windows {
			took += x.took
		}
		stored := metricSum(m1, "fleetcam_mqtt_ingest_messages_total", `result="stored"`) -
			metricSum(m0, "fleetcam_mqtt_ingest_messages_total", `result="stored"`)
		r.stored = stored / took.Seconds()
		r.trips = perUnit(m0, m1, pgTripsMetric, stored)
		r.statements = perUnit(m0, m1, pgStatementsMetric, stored)
		jobs := metricSum(m1, "fleetcam_store_commit_batch_jobs_sum") - metricSum(m0, "fleetcam_store_commit_batch_jobs_sum")
		txs := metricSum(m1, "fleetcam_store_commit_batch_jobs_count") - metricSum(m0, "fleetcam_store_commit_batch_jobs_count")
		if txs > 0 {
			r.batchJobs = jobs / txs
		}
	}
	fmt.Fprintf(b.log, "    %s: %.0f msgs/s, ack p99 %s\n", spec.name, r.m.rate(), msf(r.m.lat.p99))
	return r, nil
}

// each returns a figure of every window of the load.
func (r loadResult) each(f func(measured) float64) []float64 {
	out := make([]float64, len(r.windows))
	for i, w := range r.windows {
		out[i] = f(w)
	}
	return out
}

// describe says what a load offers.
func (s loadSpec) describe() string {
	if s.closedLoop {
		return fmt.Sprintf("%d devices, closed loop (next GPS message on PUBACK), %d fix per message", s.devices, s.fixes)
	}
	d := fmt.Sprintf("%d devices × %s GPS messages/s × %d fixes", s.devices, num(1/s.gpsEvery.Seconds()), s.fixes)
	if s.eventEvery > 0 {
		d += fmt.Sprintf(" + %s events/s each", num(1/s.eventEvery.Seconds()))
	}
	return d
}

// ingest measures durable QoS 1 ingest: a sustained mixed load, GPS
// batches and a closed loop.
func (b *bench) ingest(ctx context.Context) error {
	fl, err := b.seeded(ctx, "ingest", max(b.sc.ingestDevices, b.sc.closedDevices))
	if err != nil {
		return err
	}
	defer b.dropStorage(ctx, fl.st)
	srv, err := b.start(ctx, fl.st)
	if err != nil {
		return err
	}
	defer srv.stop()
	sustained, batches, closed := b.specs()
	t := &table{title: "2. Ingest: durable QoS 1 (PUBACK after the group commit's fsync)",
		cols: []string{"load", "acked msgs/s", "fixes/s", "ack p50", "ack p99", "jobs/commit", "fleetcam CPU", "errors", "target"}}
	for _, spec := range []loadSpec{sustained, batches, closed} {
		r, err := b.runSpec(ctx, srv.brokerURL(), srv.cmd.Process.Pid, srv, fl.imeis, spec, "ingest-"+spec.name)
		if err != nil {
			return fmt.Errorf("%s: %w", spec.name, err)
		}
		backlog, err := srv.settle(ctx, 5*time.Minute)
		if err != nil {
			return fmt.Errorf("%s: %w", spec.name, err)
		}
		verdict := ""
		switch spec.name {
		case "sustained":
			verdict = b.rep.target("ingest", "sustained_ack_p99", ms(r.m.lat.p99), "ms", false, 50)
			b.rep.runs(r.each(func(m measured) float64 { return ms(m.lat.p99) }))
			b.rep.figure("ingest", "sustained_msgs_per_s", r.m.rate(), "msgs/s")
			b.rep.runs(r.each(measured.rate))
			b.rep.figure("ingest", "sustained_ack_p50", ms(r.m.lat.p50), "ms")
		case "gps batches":
			verdict = b.rep.target("ingest", "gps_fixes_per_s", r.m.fixRate(), "fixes/s", true, 50000)
			b.rep.runs(r.each(measured.fixRate))
			b.rep.figure("ingest", "gps_batch_ack_p99", ms(r.m.lat.p99), "ms")
			b.rep.runs(r.each(func(m measured) float64 { return ms(m.lat.p99) }))
		case "closed loop":
			if b.engine == enginePostgres {
				// PostgreSQL's target is half of bbolt's figure of the same run.
				b.rep.figure("ingest", "closed_loop_msgs_per_s", r.m.rate(), "msgs/s")
				b.rep.runs(r.each(measured.rate))
				if bolt, ok := b.rep.value("ingest", "closed_loop_msgs_per_s", engineBolt); ok && bolt > 0 {
					verdict = b.rep.target("ingest", "closed_loop_vs_bbolt", r.m.rate()/bolt, "×", true, 0.5)
				}
			} else {
				verdict = b.rep.target("ingest", "closed_loop_msgs_per_s", r.m.rate(), "msgs/s", true, 12000)
				b.rep.runs(r.each(measured.rate))
			}
			b.rep.figure("ingest", "closed_loop_ack_p99", ms(r.m.lat.p99), "ms")
			b.rep.runs(r.each(func(m measured) float64 { return ms(m.lat.p99) }))
		}
		b.rep.figure("ingest", spec.name+"_server_cores", r.srvCores, "cores")
		t.add(spec.name, num(r.m.rate()), num(r.m.fixRate()), msf(r.m.lat.p50), msf(r.m.lat.p99), num(r.batchJobs),
			fmt.Sprintf("%.2f cores", r.srvCores), strconv.FormatInt(r.errors, 10), verdict)
		t.note("%s: %s; server stored %.0f msgs/s; load generator %.2f cores; %d skipped; backlog stored within %s after the load stopped",
			spec.name, spec.describe(), r.stored, r.simCores, r.skipped, backlog.Round(100*time.Millisecond))
		if b.engine == enginePostgres {
			key := strings.ReplaceAll(spec.name, " ", "_")
			b.rep.figure("ingest", key+"_pg_round_trips_per_msg", r.trips, "round trips")
			b.rep.figure("ingest", key+"_pg_statements_per_msg", r.statements, "statements")
			t.note("%s: %.2f PostgreSQL round trips and %.1f statements per message stored (every job of the server in the windows)",
				spec.name, r.trips, r.statements)
		}
		if b.engine == engineBolt {
			// The baseline compares mosquitto with fleetcam on its default engine.
			b.ingestResults = append(b.ingestResults, r)
		}
	}
	t.note("medians of %d windows of %s after %s of warm-up; fixes/s are GPS samples acknowledged, so persisted",
		b.o.runs, b.sc.window, b.sc.warmup)
	b.rep.table(t)
	return nil
}
