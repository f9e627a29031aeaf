package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/fleetcam/fleetcam/devicesim"
)

// connectedFleet is the figures of a fleet holding its connections.
type connectedFleet struct {
	devices      int
	allConnected time.Duration
	connect      devicesim.Percentiles
	errors       int64
	simRSS       int64 // this process's RSS growth with the fleet connected
	simHeap      int64 // this process's Go heap and stacks growth
}

// connectAll connects imeis to url as fast as they are accepted and
// returns once all are connected, with the fleet still running.
func (b *bench) connectAll(ctx context.Context, url string, imeis []string) (*fleetRun, connectedFleet, error) {
	runtime.GC()
	rss0, _ := procRSS(0)
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	fr, err := startFleet(ctx, devicesim.LoadOptions{
		BrokerURL: url, IMEIs: imeis, TokenSeed: benchTokenSeed, ConnectConcurrency: 256,
		KeepAlive: 300 * time.Second, ReceiveMaximum: 4,
	})
	if err != nil {
		return nil, connectedFleet{}, err
	}
	if err := fr.waitConnected(ctx, len(imeis), 3*time.Minute, b.log); err != nil {
		fr.stop()
		return nil, connectedFleet{}, err
	}
	s := fr.stats.Snapshot()
	runtime.GC()
	rss1, _ := procRSS(0)
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	return fr, connectedFleet{devices: len(imeis), allConnected: s.AllConnected, connect: s.Connect, errors: s.ConnectErrors,
		simRSS: rss1 - rss0, simHeap: int64(m1.HeapInuse+m1.StackInuse) - int64(m0.HeapInuse+m0.StackInuse)}, nil
}

// memSample is the server's memory at one moment.
type memSample struct {
	rss, anon          int64
	heap, stacks, gors float64
}

func (b *bench) sampleMemory(srv *server) (memSample, error) {
	st, err := procStatus(srv.cmd.Process.Pid)
	if err != nil {
		return memSample{}, err
	}
	m, err := srv.metrics()
	if err != nil {
		return memSample{}, err
	}
	return memSample{rss: st["VmRSS"], anon: st["RssAnon"], heap: metricSum(m, "go_memstats_heap_inuse_bytes"),
		stacks: metricSum(m, "go_memstats_stack_inuse_bytes"), gors: metricSum(m, "go_goroutines")}, nil
}

// collectThrice has fleetcam collect its garbage three times; with
// -profile, the last heap profile is saved as <name>-2.pprof when name is set.
func (b *bench) collectThrice(srv *server, name string) error {
	for i := range 3 {
		path := ""
		if name != "" {
			path = filepath.Join(b.work, fmt.Sprintf("%s-%d.pprof", name, i))
		}
		if err := srv.collect(path, b.o.profile && name != "" && i == 2); err != nil {
			return err
		}
	}
	return nil
}

// hold connects holdDevices authenticated devices with persistent
// sessions and measures the server's memory per connected device and the
// connect(+auth) rate.
func (b *bench) hold(ctx context.Context) error {
	n := b.sc.holdDevices
	fl, err := b.seeded(ctx, "hold", n)
	if err != nil {
		return err
	}
	defer b.dropStorage(ctx, fl.st)
	// Profiles on: the settled figure is taken after garbage collections
	// requested through them.
	srv, err := b.startWith(ctx, fl.st, true)
	if err != nil {
		return err
	}
	defer srv.stop()
	if err := sleep(ctx, time.Second); err != nil {
		return err
	}
	// The idle heap after the same collections as the settled one it is
	// subtracted from: start-up garbage is not per-device memory, and with
	// a few KiB per device a baseline taken differently can outweigh the
	// devices of a quick run.
	if err := b.collectThrice(srv, ""); err != nil {
		return err
	}
	idle, err := b.sampleMemory(srv)
	if err != nil {
		return err
	}
	b.profile(ctx, srv, 3*time.Second, "hold-connect")
	m0, err := srv.metrics()
	if err != nil {
		return err
	}
	cpu := startCPU(srv.cmd.Process.Pid)
	fr, cf, err := b.connectAll(ctx, srv.brokerURL(), fl.imeis)
	if err != nil {
		return err
	}
	defer fr.stop()
	srvCores, simCores := cpu.cores()
	mc, err := srv.metrics()
	if err != nil {
		return err
	}
	if err := sleep(ctx, b.sc.holdSettle); err != nil {
		return err
	}
	fresh, err := b.sampleMemory(srv)
	if err != nil {
		return err
	}
	// Settled: after the collections a running server makes on its own
	// (at the latest every two minutes), with time for the scavenger.
	if err := b.collectThrice(srv, "hold-heap"); err != nil {
		return err
	}
	if err := sleep(ctx, b.sc.holdSettle); err != nil {
		return err
	}
	settled, err := b.sampleMemory(srv)
	if err != nil {
		return err
	}
	m, err := srv.metrics()
	if err != nil {
		return err
	}
	online := metricSum(m, "fleetcam_mqtt_devices_online")
	per := func(v float64) float64 { return v / float64(n) / 1024 }
	rate := float64(n) / cf.allConnected.Seconds()

	t := &table{title: fmt.Sprintf("1. Connection hold: %d authenticated devices, persistent sessions", n),
		cols: []string{"figure", "after connecting", "settled", "target"}}
	t.add("devices online (server metric)", "", strconv.Itoa(int(online)), "")
	t.add("all connected in", cf.allConnected.Round(time.Millisecond).String(), "", "")
	t.add("connect + auth rate", num(rate)+" devices/s", "", b.rep.target("hold", "connect_rate", rate, "devices/s", true, 2000))
	t.add("connect time per device p50 / p99", msf(cf.connect.P50)+" / "+msf(cf.connect.P99), "", "")
	t.add("connect errors", strconv.FormatInt(cf.errors, 10), "", "")
	t.add("CPU while connecting: fleetcam / simulator", fmt.Sprintf("%.2f / %.2f cores", srvCores, simCores), "", "")
	if commits := metricSum(mc, "fleetcam_store_commit_seconds_count") - metricSum(m0, "fleetcam_store_commit_seconds_count"); commits > 0 {
		jobs := metricSum(mc, "fleetcam_store_commit_batch_jobs_sum") - metricSum(m0, "fleetcam_store_commit_batch_jobs_sum")
		secs := metricSum(mc, "fleetcam_store_commit_seconds_sum") - metricSum(m0, "fleetcam_store_commit_seconds_sum")
		b.rep.figure("hold", "commit_jobs_while_connecting", jobs/commits, "jobs")
		b.rep.figure("hold", "commit_ms_while_connecting", secs/commits*1000, "ms")
		t.add("group commits while connecting: count, jobs and mean time each",
			fmt.Sprintf("%.0f, %.1f jobs, %s", commits, jobs/commits, msf(time.Duration(secs/commits*float64(time.Second)))), "", "")
	}
	if b.engine == enginePostgres {
		trips, stmts := perUnit(m0, m, pgTripsMetric, float64(n)), perUnit(m0, m, pgStatementsMetric, float64(n))
		b.rep.figure("hold", "pg_round_trips_per_device", trips, "round trips")
		b.rep.figure("hold", "pg_statements_per_device", stmts, "statements")
		t.add("PostgreSQL round trips / statements per device", "", fmt.Sprintf("%.1f / %.1f", trips, stmts), "")
	}
	t.add("server RSS (idle before: "+num(mib(idle.rss))+" MiB)", num(mib(fresh.rss))+" MiB", num(mib(settled.rss))+" MiB", "")
	t.add("server RSS per device", num(per(float64(fresh.rss)))+" KiB", num(per(float64(settled.rss)))+" KiB",
		b.rep.target("hold", "rss_per_device", per(float64(settled.rss)), "KiB", false, 32))
	t.add("  anonymous (without the store's mapped file)", num(per(float64(fresh.anon)))+" KiB", num(per(float64(settled.anon)))+" KiB", "")
	t.add("  growth over the idle server", num(per(float64(fresh.rss-idle.rss)))+" KiB", num(per(float64(settled.rss-idle.rss)))+" KiB", "")
	t.add("server Go heap in use per device", num(per(fresh.heap-idle.heap))+" KiB", num(per(settled.heap-idle.heap))+" KiB", "")
	t.add("server goroutine stacks per device", num(per(fresh.stacks-idle.stacks))+" KiB", num(per(settled.stacks-idle.stacks))+" KiB", "")
	t.add("server goroutines per device", num((fresh.gors-idle.gors)/float64(n)), num((settled.gors-idle.gors)/float64(n)), "")
	t.add("simulator RSS / Go heap + stacks per device", num(per(float64(cf.simRSS)))+" / "+num(per(float64(cf.simHeap)))+" KiB", "", "")
	t.note("store seeded directly (devices activated, tokens issued); each device connects with its token, subscribes and reports its status")
	t.note("settled: after three garbage collections and %s; a running server collects at least every two minutes", b.sc.holdSettle)
	b.rep.figure("hold", "devices_online", online, "devices")
	b.rep.figure("hold", "rss_per_device_after_connect", per(float64(fresh.rss)), "KiB")
	b.rep.figure("hold", "anon_rss_per_device", per(float64(settled.anon)), "KiB")
	b.rep.figure("hold", "heap_per_device", per(settled.heap-idle.heap), "KiB")
	b.rep.figure("hold", "stacks_per_device", per(settled.stacks-idle.stacks), "KiB")
	b.rep.figure("hold", "sim_rss_per_device", per(float64(cf.simRSS)), "KiB")
	b.rep.table(t)
	if b.engine == engineBolt {
		// The baseline compares mosquitto with fleetcam on its default engine.
		b.holdResult, b.holdRSS = &cf, settled.rss
	}
	return nil
}

// procStatus reads the kB figures of /proc/<pid>/status, in bytes.
func procStatus(pid int) (map[string]int64, error) {
	raw, err := os.ReadFile(procPath(pid, "status"))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(raw), "\n") {
		var k string
		var v int64
		if n, _ := fmt.Sscanf(line, "%s %d kB", &k, &v); n == 2 {
			out[k[:len(k)-1]] = v << 10
		}
	}
	return out, nil
}

func mib(v int64) float64 { return float64(v) / (1 << 20) }
