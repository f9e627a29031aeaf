package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fleetcam/fleetcam/devicesim"
)

// loadOptions turns the flags into a load fleet's options, checking each.
func (f *flags) loadOptions(logger *slog.Logger, stats *devicesim.Stats) (devicesim.LoadOptions, error) {
	var o devicesim.LoadOptions
	switch {
	case f.devices < 1:
		return o, fmt.Errorf("-devices %d must be at least 1", f.devices)
	case f.mqtt != "5":
		return o, fmt.Errorf("-mqtt %q: load mode speaks MQTT 5 only", f.mqtt)
	case f.scenario != "":
		return o, fmt.Errorf("-scenario is not available in load mode (it drives full devices)")
	case f.receiveMax < 1 || f.receiveMax > 65535:
		return o, fmt.Errorf("-receive-max %d must be from 1 to 65535", f.receiveMax)
	case f.gpsRate < 0 || f.gpsRate > 1000:
		return o, fmt.Errorf("-gps-rate %g must be from 0 to 1000", f.gpsRate)
	case f.gpsBatch < 0 || f.eventRate < 0 || f.connectRate < 0 || f.window < 0:
		return o, fmt.Errorf("-gps-batch, -event-rate, -connect-rate and -window must not be negative")
	case f.connectParallel < 1:
		return o, fmt.Errorf("-connect-parallel %d must be at least 1", f.connectParallel)
	}
	imeis, err := devicesim.IMEIs(f.imeiStart, f.devices)
	if err != nil {
		return o, fmt.Errorf("-imei-start: %w", err)
	}
	master, err := hex.DecodeString(f.masterKey)
	if err != nil || len(master) < 16 {
		return o, fmt.Errorf("-master-key must be at least 32 hex characters")
	}
	var seed []byte
	if f.tokenSeed != "" {
		if seed, err = hex.DecodeString(f.tokenSeed); err != nil || len(seed) < 16 {
			return o, fmt.Errorf("-token-seed must be at least 32 hex characters")
		}
	}
	route, err := devicesim.BuiltinRoute(f.route)
	if err != nil {
		return o, fmt.Errorf("-route: %w", err)
	}
	if f.gpx != "" {
		if route, err = devicesim.LoadGPX(f.gpx, f.gpxSpeed); err != nil {
			return o, fmt.Errorf("-gpx: %w", err)
		}
	}
	o = devicesim.LoadOptions{
		BrokerURL: f.broker, IMEIs: imeis, FactoryMasterKey: master, TokenSeed: seed, StateDir: f.stateDir,
		Firmware: f.firmware, ConnectRate: f.connectRate, ConnectConcurrency: f.connectParallel,
		CleanStart: f.clean, SessionExpiry: f.sessionExpiry, KeepAlive: f.keepAlive,
		ReceiveMaximum: uint16(f.receiveMax), GPSBatch: max(f.gpsBatch, 1), ClosedLoop: f.closedLoop,
		Window: f.window, Route: route, Stats: stats, Logger: logger,
	}
	if f.gpsRate > 0 {
		o.GPSInterval = time.Duration(float64(time.Second) / f.gpsRate)
		if f.gpsBatch == 0 { // one message per second, as in full mode
			o.GPSBatch = max(1, int(f.gpsRate))
		}
	}
	if f.eventRate > 0 {
		o.EventInterval = time.Duration(float64(time.Second) / f.eventRate)
	}
	return o, nil
}

// runLoad runs a load fleet until ctx ends or -duration passes.
func runLoad(ctx context.Context, f *flags, logger *slog.Logger, stdout, stderr io.Writer) int {
	stats := devicesim.NewStats()
	opts, err := f.loadOptions(logger, stats)
	if err != nil {
		fmt.Fprintf(stderr, "devicesim: %v\n", err)
		return 2
	}
	ackLog, err := openAckLog(f.ackLog)
	if err != nil {
		fmt.Fprintf(stderr, "devicesim: -ack-log: %v\n", err)
		return 1
	}
	if ackLog != nil {
		opts.OnAck = ackLog.record
	}
	fleet, err := devicesim.NewLoadFleet(opts)
	if err != nil {
		fmt.Fprintf(stderr, "devicesim: %v\n", err)
		return 1
	}
	mode := fmt.Sprintf("GPS %g fixes/s in batches of %d, events %g/s per device", f.gpsRate, opts.GPSBatch, f.eventRate)
	if f.closedLoop {
		mode = fmt.Sprintf("closed loop, GPS batches of %d, window %d", opts.GPSBatch, max(f.window, 1))
	}
	fmt.Fprintf(stderr, "devicesim: load mode, %d device(s) %s…%s → %s; %s\n",
		f.devices, opts.IMEIs[0], opts.IMEIs[len(opts.IMEIs)-1], f.broker, mode)
	mem := &memorySampler{}
	return drive(ctx, f, fleet, stats, ackLog, func(done <-chan struct{}) { mem.run(done, stats, f.devices) }, stderr,
		func(s devicesim.Snapshot) { loadSummary(stdout, s, f.devices, mem.result()) })
}

// memory is the simulator's own footprint with its devices connected.
type memory struct {
	Devices    int64 // devices online when sampled
	RSS        int64 // bytes, from /proc/self/status
	HeapInuse  int64
	StackInuse int64
	Goroutines int
}

// memorySampler records the simulator's footprint at the moment the most
// devices were online (the latest such moment).
type memorySampler struct {
	mu   sync.Mutex
	best memory
}

func (m *memorySampler) run(done <-chan struct{}, stats *devicesim.Stats, n int) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		online := stats.Snapshot().Online
		m.mu.Lock()
		take := online > 0 && online >= m.best.Devices
		m.mu.Unlock()
		if !take {
			continue
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s := memory{Devices: online, RSS: selfRSS(), HeapInuse: int64(ms.HeapInuse), StackInuse: int64(ms.StackInuse),
			Goroutines: runtime.NumGoroutine()}
		m.mu.Lock()
		m.best = s
		m.mu.Unlock()
	}
}

func (m *memorySampler) result() memory {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.best
}

// selfRSS reads this process's resident set size (0 where /proc is missing).
func selfRSS() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// loadSummary prints a load run's figures.
func loadSummary(w io.Writer, s devicesim.Snapshot, n int, mem memory) {
	all, rate := "not all connected", ""
	if s.AllConnected > 0 {
		all = "all connected in " + s.AllConnected.Round(time.Millisecond).String()
		rate = fmt.Sprintf(" (%.0f devices/s)", float64(n)/s.AllConnected.Seconds())
	}
	secs := max(s.Elapsed.Seconds(), 1e-9)
	lastErr := s.LastError
	if lastErr == "" {
		lastErr = "none"
	}
	fmt.Fprintf(w, "devicesim summary (load mode)\n")
	fmt.Fprintf(w, "  devices        %d (online at exit %d, ever connected %d)\n", n, s.OnlineAtStop, s.FirstConnects)
	fmt.Fprintf(w, "  run time       %s\n", s.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  connect        %s%s; connect time p50 %s p99 %s max %s\n", all, rate, ms(s.Connect.P50), ms(s.Connect.P99), ms(s.Connect.Max))
	fmt.Fprintf(w, "  connections    %d made, %d failed (%d refused by the broker), %d ended\n", s.Connects, s.ConnectErrors, s.Refused, s.Disconnects)
	fmt.Fprintf(w, "  published      %d acknowledged, %.1f msgs/s (GPS batches %d, events %d, config acks %d, replies %d)\n",
		s.Published, float64(s.Published)/secs, s.GPSBatches, s.EventsSent, s.ConfigAcks, s.Replies)
	fmt.Fprintf(w, "  ack latency    p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n", ms(s.Ack.P50), ms(s.Ack.P90), ms(s.Ack.P99), ms(s.Ack.P999), ms(s.Ack.Max))
	fmt.Fprintf(w, "  skipped        %d messages (device offline or window full)\n", s.Skipped)
	if mem.Devices > 0 {
		fmt.Fprintf(w, "  memory         %d devices online: RSS %.1f MiB (%.1f KiB per device), heap %.1f MiB, stacks %.1f MiB, %d goroutines\n",
			mem.Devices, mib(mem.RSS), float64(mem.RSS)/1024/float64(mem.Devices), mib(mem.HeapInuse), mib(mem.StackInuse), mem.Goroutines)
	}
	fmt.Fprintf(w, "  errors         %d total: %d connect, %d publish\n", s.Errors(), s.ConnectErrors, s.PublishErrors)
	fmt.Fprintf(w, "  last error     %s\n", lastErr)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
