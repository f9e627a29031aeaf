// Command devicesim runs simulated fleetcam dashcams against a broker: one
// device for a demo, or thousands in load mode with a live progress line and
// acknowledgement latency percentiles. Each device bootstraps with its
// factory key, keeps its token under -state-dir, applies and acknowledges
// its configuration, answers commands, drives a route and reports events.
//
// Examples:
//
//	devicesim                                    # one dashcam on the city loop, 1 Hz GPS
//	devicesim -scenario shift.yaml -gpx trip.gpx # a scripted drive along a GPX track
//	devicesim -load -devices 10000 -connect-rate 2000 -gps-rate 1 -event-rate 0.01 -duration 5m
//	devicesim -load -devices 100 -closed-loop -duration 30s   # maximum acknowledged throughput
//	FLEETCAM_TOKEN=… devicesim -load -devices 10000 -add-to http://127.0.0.1:8080/v2/organizations/1/devices
//	devicesim -firmware 3.9 -mqtt 3.1.1          # legacy firmware over MQTT 3.1.1
//	devicesim -health sdCardFailing,powerDisconnected # a device with health alarms
//
// A scenario is YAML or JSON: a list of steps, or {loop, steps}. A step has
// "at" (a duration such as 90s, or seconds) and either "type" (an API-syntax
// event type, with optional severity, pinCode, qrCode, driverId, geoFenceId,
// geoFencePath, cameraId) or "action": offline (with duration), reboot,
// factoryReset, checkIn (pinCode or qrCode), checkOut, formatStorage, health
// (faults: a list of the -health names; none is healthy), auxConnect and
// auxDisconnect (cameraId of a paired auxiliary camera). See
// devicesim/testdata/scenario.yaml and faults.yaml.
//
// Load mode (-load) runs light devices instead of full dashcams: each keeps
// only its credential, connection and timers (the MQTT client's three
// goroutines while idle), publishes GPS and driving events at the set rates
// (or back to back with -closed-loop), acknowledges configurations and
// answers commands with an error. Its summary adds the connect rate and the
// simulator's own memory per connected device.
//
// The summary goes to stdout; progress and logs to stderr. The exit status
// is 0, 1 when a device never connected or setup failed, 2 for bad flags.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/devicesim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// flags are the command-line settings.
type flags struct {
	broker, imeiStart, masterKey, stateDir, firmware, mqtt string
	route, gpx, scenario, ackLog, frameSize, logLevel      string
	tokenSeed, addTo                                       string
	devices, receiveMax, gpsBatch, window, connectParallel int
	gpsRate, gpxSpeed, eventRate, connectRate              float64
	clean, load, ignoreEventConfig, closedLoop             bool
	sessionExpiry, keepAlive, duration, progress           time.Duration
	health                                                 string
}

// usageHead and usageTail frame the flag list of -help.
const (
	usageHead = `usage: devicesim [flags]

Simulated fleetcam dashcams against a broker (make run starts one on 127.0.0.1:1883). A device
must be in an organization's inventory (POST /v2/organizations/{orgId}/devices) to connect.

Examples:
  devicesim -imei-start 356938100000000        # one dashcam on the city loop, 1 Hz GPS
  devicesim -devices 10 -duration 60s -event-rate 0.1
  devicesim -scenario devicesim/testdata/scenario.yaml -gpx trip.gpx
  devicesim -health sdCardFailing,powerDisconnected
  devicesim -firmware 3.9 -mqtt 3.1.1           # legacy firmware over MQTT 3.1.1
  devicesim -load -devices 10000 -connect-rate 2000 -gps-rate 1 -event-rate 0.01 -duration 5m
  devicesim -load -devices 100 -closed-loop -duration 30s
  FLEETCAM_TOKEN=$TOKEN devicesim -load -devices 10000 -add-to http://127.0.0.1:8080/v2/organizations/1/devices
                                                # add the devices to organization 1 first

Flags:
`
	usageTail = `
Scenario files (-scenario), YAML or JSON: a list of steps, or {loop: true|false, steps: [...]}.
Each step has "at", the offset from the start (a duration such as 90s, or seconds), and either
  type: EVENT     an event in the API's syntax (accOn, deceleration, driverCheckIn, ...), with
                  optional severity, pinCode, qrCode, driverId, geoFenceId, geoFencePath, cameraId
  action: NAME    offline (with duration: the device drops its connection, queues, comes back),
                  reboot, factoryReset, checkIn (pinCode or qrCode), checkOut, formatStorage,
                  health (faults: a list of -health names; none is healthy), auxConnect and
                  auxDisconnect (cameraId of a paired auxiliary camera)
For example:
  loop: false
  steps:
    - {at: 2s, type: accOn}
    - {at: 5s, action: checkIn, pinCode: "12345"}
    - {at: 60s, action: offline, duration: 30s}
    - {at: 150s, action: checkOut}
devicesim/testdata/scenario.yaml and faults.yaml are complete examples.

The summary goes to stdout, progress and logs to stderr. Exit status: 0; 1 when a device never
connected or setup failed; 2 for bad flags.
`
)

func parseFlags(args []string, stdout, stderr io.Writer) (*flags, error) {
	f := &flags{}
	fs := flag.NewFlagSet("devicesim", flag.ContinueOnError)
	var out bytes.Buffer // -help goes to stdout, a flag error with the usage to stderr
	fs.SetOutput(&out)
	fs.StringVar(&f.broker, "broker", "tcp://127.0.0.1:1883", "broker URL: tcp://, mqtt://, tls://, ssl:// or mqtts:// host:port")
	fs.IntVar(&f.devices, "devices", 1, "number of simulated devices")
	fs.StringVar(&f.imeiStart, "imei-start", "35693810000000", "first IMEI: a 14-digit body (the check digit is added) or a valid 15-digit IMEI; devices take consecutive bodies")
	fs.StringVar(&f.masterKey, "master-key", configs.Default().Devices.FactoryMasterKey, "factory master key in hex (the server's devices.factoryMasterKey)")
	fs.StringVar(&f.stateDir, "state-dir", "devicesim-state", "directory of per-IMEI state files (token, config), mode 0600; empty keeps state in memory")
	fs.StringVar(&f.firmware, "firmware", devicesim.DefaultFirmware, "firmware version; below 3.12 connects in legacy mode without a token")
	fs.StringVar(&f.mqtt, "mqtt", "5", "MQTT version: 5 or 3.1.1")
	fs.BoolVar(&f.clean, "clean", false, "clean sessions instead of persistent ones")
	fs.DurationVar(&f.sessionExpiry, "session-expiry", time.Hour, "session expiry of persistent MQTT 5 sessions")
	fs.DurationVar(&f.keepAlive, "keepalive", 60*time.Second, "MQTT keep-alive")
	fs.IntVar(&f.receiveMax, "receive-max", devicesim.DefaultReceiveMaximum, "MQTT 5 receive maximum per device (1-65535)")
	fs.StringVar(&f.route, "route", devicesim.RouteCityLoop, "built-in route: "+strings.Join(devicesim.RouteNames(), " or "))
	fs.StringVar(&f.gpx, "gpx", "", "GPX file to drive instead of a built-in route")
	fs.Float64Var(&f.gpxSpeed, "gpx-speed", 50, "speed in km/h for GPX points without times")
	fs.Float64Var(&f.gpsRate, "gps-rate", 1, "GPS fixes per second per device; 0 disables GPS")
	fs.IntVar(&f.gpsBatch, "gps-batch", 0, "fixes per GPS message; 0: one message per second")
	fs.Float64Var(&f.eventRate, "event-rate", 0, "random driving events per second per device (e.g. 0.01)")
	fs.StringVar(&f.scenario, "scenario", "", "scenario file (YAML or JSON timeline of events and actions)")
	fs.BoolVar(&f.ignoreEventConfig, "ignore-event-config", false, "report events even when the device configuration disables them")
	fs.StringVar(&f.frameSize, "frame-size", "640x360", "snapshot and video frame size WxH")
	fs.Float64Var(&f.connectRate, "connect-rate", 1000, "devices started per second; 0: all at once")
	fs.DurationVar(&f.duration, "duration", 0, "stop after this long; 0: run until interrupted")
	fs.DurationVar(&f.progress, "progress", time.Second, "progress line interval; 0: none")
	fs.BoolVar(&f.load, "load", false, "load mode: light devices (GPS, events, config acks only), latency percentiles and memory per device in the summary")
	fs.BoolVar(&f.closedLoop, "closed-loop", false, "load mode: each device publishes GPS back to back, -window at a time, ignoring -gps-rate")
	fs.IntVar(&f.window, "window", 0, "load mode: publishes a device may have awaiting PUBACK (0: 1 in closed loop, 16 otherwise)")
	fs.IntVar(&f.connectParallel, "connect-parallel", 256, "load mode: connection attempts in progress at once")
	fs.StringVar(&f.tokenSeed, "token-seed", "", "load mode: hex seed the devices derive their tokens from (a store provisioned with the same seed, e.g. by fleetbench) instead of bootstrapping")
	fs.StringVar(&f.addTo, "add-to", "", "before connecting, add the devices to the inventory of this organization: its device list URL, http://127.0.0.1:8080/v2/organizations/ID/devices, with the API token in "+tokenEnv+" (devices already registered are skipped)")
	fs.StringVar(&f.ackLog, "ack-log", "", "file that records every acknowledged publish: unix ms, imei, topic, key (event id, first GPS fix ms, command id, file id, or -), latency µs")
	fs.StringVar(&f.health, "health", "", "comma-separated health faults every device reports: sdCardMissing, sdCardFailing, recordingTestFailed, cameraDisconnected, powerDisconnected")
	fs.StringVar(&f.logLevel, "log-level", "warn", "log level: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHead)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), usageTail)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			stderr = stdout
		}
		out.WriteTo(stderr)
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return f, nil
}

// options turns flags into fleet options, checking each.
func (f *flags) options(logger *slog.Logger, stats *devicesim.Stats) (devicesim.FleetOptions, error) {
	var o devicesim.FleetOptions
	if f.devices < 1 {
		return o, fmt.Errorf("-devices %d must be at least 1", f.devices)
	}
	imeis, err := devicesim.IMEIs(f.imeiStart, f.devices)
	if err != nil {
		return o, fmt.Errorf("-imei-start: %w", err)
	}
	master, err := hex.DecodeString(f.masterKey)
	if err != nil || len(master) < 16 {
		return o, fmt.Errorf("-master-key must be at least 32 hex characters")
	}
	version := 0
	switch f.mqtt {
	case "5":
		version = 5
	case "3.1.1", "311", "4":
		version = 4
	default:
		return o, fmt.Errorf("-mqtt %q must be 5 or 3.1.1", f.mqtt)
	}
	if f.receiveMax < 1 || f.receiveMax > 65535 {
		return o, fmt.Errorf("-receive-max %d must be from 1 to 65535", f.receiveMax)
	}
	if f.gpsRate < 0 || f.gpsRate > 100 {
		return o, fmt.Errorf("-gps-rate %g must be from 0 to 100", f.gpsRate)
	}
	if f.gpsBatch < 0 || f.eventRate < 0 || f.connectRate < 0 {
		return o, errors.New("-gps-batch, -event-rate and -connect-rate must not be negative")
	}
	w, h, err := parseSize(f.frameSize)
	if err != nil {
		return o, err
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
	var sc *devicesim.Scenario
	if f.scenario != "" {
		if sc, err = devicesim.LoadScenario(f.scenario); err != nil {
			return o, fmt.Errorf("-scenario: %w", err)
		}
	}
	var faults []string
	if f.health != "" {
		faults = strings.Split(f.health, ",")
	}
	health, err := devicesim.ParseHealth(faults)
	if err != nil {
		return o, fmt.Errorf("-health: %w", err)
	}
	var gpsInterval time.Duration
	if f.gpsRate > 0 {
		gpsInterval = time.Duration(float64(time.Second) / f.gpsRate)
	}
	o = devicesim.FleetOptions{
		IMEIs:       imeis,
		ConnectRate: f.connectRate,
		Device: devicesim.Options{
			BrokerURL: f.broker, FactoryMasterKey: master, StateDir: f.stateDir, Firmware: f.firmware,
			MQTTVersion: version, CleanSession: f.clean, SessionExpiry: f.sessionExpiry, KeepAlive: f.keepAlive,
			ReceiveMaximum: uint16(f.receiveMax), Route: route, RouteOffset: -1,
			GPSInterval: gpsInterval, GPSBatch: f.gpsBatch, EventRate: f.eventRate, Scenario: sc,
			FrameWidth: w, FrameHeight: h, IgnoreEventConfig: f.ignoreEventConfig, Health: health,
			Logger: logger, Stats: stats,
		},
	}
	return o, nil
}

func parseSize(s string) (int, int, error) {
	ws, hs, ok := strings.Cut(s, "x")
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	if !ok || err1 != nil || err2 != nil || w < 64 || h < 48 || w > 4096 || h > 4096 {
		return 0, 0, fmt.Errorf("-frame-size %q must be WxH from 64x48 to 4096x4096", s)
	}
	return w, h, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, err := parseFlags(args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "devicesim: %v\n", err)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		fmt.Fprintf(stderr, "devicesim: -log-level %q must be debug, info, warn or error\n", f.logLevel)
		return 2
	}
	if f.load && level < slog.LevelError {
		level = slog.LevelError
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if f.addTo != "" {
		imeis, err := devicesim.IMEIs(f.imeiStart, f.devices)
		if err != nil {
			fmt.Fprintf(stderr, "devicesim: -imei-start: %v\n", err)
			return 2
		}
		if err := addToInventory(ctx, f.addTo, os.Getenv(tokenEnv), imeis, stderr); err != nil {
			fmt.Fprintf(stderr, "devicesim: %v\n", err)
			return 1
		}
	}
	if f.load {
		return runLoad(ctx, f, logger, stdout, stderr)
	}
	stats := devicesim.NewStats()
	opts, err := f.options(logger, stats)
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
		opts.Device.OnAck = ackLog.record
	}
	fleet, err := devicesim.NewFleet(opts)
	if err != nil {
		fmt.Fprintf(stderr, "devicesim: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "devicesim: %d device(s) %s…%s → %s (MQTT %s, firmware %s, route %s)\n",
		f.devices, opts.IMEIs[0], opts.IMEIs[len(opts.IMEIs)-1], f.broker, f.mqtt, f.firmware, opts.Device.Route.Name)
	return drive(ctx, f, fleet, stats, ackLog, nil, stderr, func(s devicesim.Snapshot) { summary(stdout, s, f.devices) })
}

// drive runs fleet until ctx ends or -duration passes, with progress lines
// and beside (when set) running until it stops. It then closes the ack
// log, prints the summary with report and answers the exit status: 1 when
// a device never connected.
func drive(ctx context.Context, f *flags, fleet interface{ Run(context.Context) error }, stats *devicesim.Stats,
	ackLog *ackWriter, beside func(done <-chan struct{}), stderr io.Writer, report func(devicesim.Snapshot)) int {
	if f.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.duration)
		defer cancel()
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	if beside != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			beside(done)
		}()
	}
	if f.progress > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			progress(done, stderr, stats, f.devices, f.progress, f.load)
		}()
	}
	// The devices run until the run ends; the stats note who was online
	// first, as stopping disconnects them all.
	runCtx, stopRun := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			stats.Stop()
		case <-ran:
		}
		stopRun()
	}()
	_ = fleet.Run(runCtx)
	close(ran)
	close(done)
	wg.Wait()
	if ackLog != nil {
		if err := ackLog.close(); err != nil {
			fmt.Fprintf(stderr, "devicesim: -ack-log: %v\n", err)
		}
	}
	snap := stats.Snapshot()
	report(snap)
	if snap.FirstConnects < int64(f.devices) {
		fmt.Fprintf(stderr, "devicesim: %d of %d devices never connected\n", int64(f.devices)-snap.FirstConnects, f.devices)
		return 1
	}
	return 0
}

// progress prints one line per interval until done is closed.
func progress(done <-chan struct{}, w io.Writer, stats *devicesim.Stats, n int, every time.Duration, load bool) {
	t := time.NewTicker(every)
	defer t.Stop()
	prev := stats.Snapshot()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		s := stats.Snapshot()
		dt := (s.Elapsed - prev.Elapsed).Seconds()
		rate := float64(s.Published-prev.Published) / max(dt, 1e-9)
		line := fmt.Sprintf("%6.0fs  connected %d/%d  msgs %.0f/s (%d acked)  events %d  errors %d",
			s.Elapsed.Seconds(), s.Online, n, rate, s.Published, s.Events, s.Errors())
		if load {
			line += fmt.Sprintf("  ack p50 %s p99 %s", ms(s.Ack.P50), ms(s.Ack.P99))
		}
		if s.LastError != "" && s.Errors() > prev.Errors() {
			line += "  last: " + s.LastError
		}
		fmt.Fprintln(w, line)
		prev = s
	}
}

// summary prints the run's figures.
func summary(w io.Writer, s devicesim.Snapshot, n int) {
	all := "not all connected"
	if s.AllConnected > 0 {
		all = "all connected in " + s.AllConnected.Round(time.Millisecond).String()
	}
	secs := max(s.Elapsed.Seconds(), 1e-9)
	lastErr := s.LastError
	if lastErr == "" {
		lastErr = "none"
	}
	fmt.Fprintf(w, "devicesim summary\n")
	fmt.Fprintf(w, "  devices        %d (online at exit %d, ever connected %d)\n", n, s.OnlineAtStop, s.FirstConnects)
	fmt.Fprintf(w, "  run time       %s\n", s.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  connect        %s; connect time p50 %s p99 %s max %s\n", all, ms(s.Connect.P50), ms(s.Connect.P99), ms(s.Connect.Max))
	fmt.Fprintf(w, "  connections    %d made, %d failed (%d refused by the broker), %d ended\n", s.Connects, s.ConnectErrors, s.Refused, s.Disconnects)
	fmt.Fprintf(w, "  published      %d acknowledged, %.1f msgs/s (GPS batches %d, events %d, replies %d, media notices %d)\n",
		s.Published, float64(s.Published)/secs, s.GPSBatches, s.EventsSent, s.Replies, s.MediaSent)
	fmt.Fprintf(w, "  ack latency    p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n", ms(s.Ack.P50), ms(s.Ack.P90), ms(s.Ack.P99), ms(s.Ack.P999), ms(s.Ack.Max))
	fmt.Fprintf(w, "  received       %d messages, %d commands (%d answered with an error), %d token grants, %d config acks\n",
		s.Received, s.Commands, s.CommandErrors, s.Grants, s.ConfigAcks)
	fmt.Fprintf(w, "  events         %d created, %d suppressed by config; %d GPS fixes\n", s.Events, s.Suppressed, s.GPSSamples)
	fmt.Fprintf(w, "  uploads        %d (%d bytes), %d failed\n", s.Uploads, s.UploadBytes, s.UploadErrors)
	fmt.Fprintf(w, "  errors         %d total: %d publish, %d dropped from full outboxes\n", s.Errors(), s.PublishErrors, s.Dropped)
	fmt.Fprintf(w, "  last error     %s\n", lastErr)
}

// ms formats a latency in milliseconds.
func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + "ms" }

// openAckLog opens the -ack-log file for appending; nil when path is empty.
func openAckLog(path string) (*ackWriter, error) {
	if path == "" {
		return nil, nil
	}
	file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &ackWriter{w: bufio.NewWriterSize(file, 1<<16), f: file}, nil
}

// ackWriter appends one line per acknowledged publish.
type ackWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	f   *os.File
	err error
}

func (a *ackWriter) record(ack devicesim.Ack) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return
	}
	key := ack.Key
	if key == "" {
		key = "-"
	}
	_, a.err = fmt.Fprintf(a.w, "%d %s %s %s %d\n", ack.At.UnixMilli(), ack.IMEI, ack.Topic, key, ack.Latency.Microseconds())
}

func (a *ackWriter) close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.w.Flush(); a.err == nil {
		a.err = err
	}
	if err := a.f.Close(); a.err == nil {
		a.err = err
	}
	return a.err
}
