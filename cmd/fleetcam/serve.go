package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetcam/fleetcam/broker"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/cloudapi"
	"github.com/fleetcam/fleetcam/cloudapi/alarmmail"
	"github.com/fleetcam/fleetcam/cloudapi/eventmail"
	"github.com/fleetcam/fleetcam/cloudapi/webhooks"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// storeFile is the bbolt file inside the data dir.
const storeFile = "fleetcam.db"

// serve runs fleetcam until ctx is cancelled, then shuts down gracefully:
// listeners stop accepting, requests in flight finish, and the store closes
// after its last commit.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig("serve", args, getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg.LogLevel, stderr)
	app, err := start(ctx, cfg, log, stdout)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case err := <-app.done:
		log.Error("a listener failed; shutting down", "err", err)
		app.stop(cfg.HTTP.ShutdownTimeout)
		return err
	}
	log.Info("shutting down")
	return app.stop(cfg.HTTP.ShutdownTimeout)
}

// loadConfig reads the arguments of `fleetcam <command>` for the commands
// that take only -config, and loads the configuration: defaults, the
// file, then the FLEETCAM_* environment. -h returns flag.ErrHelp, for the
// caller to print the usage; any other argument is an error with it.
func loadConfig(command string, args []string, getenv func(string) string) (configs.Config, error) {
	return loadConfigWith(configs.Load, command, args, getenv)
}

// loadConfigWith is loadConfig with load in place of configs.Load.
func loadConfigWith(load func(string, func(string) string) (configs.Config, error), command string, args []string,
	getenv func(string) string) (configs.Config, error) {
	fs := flag.NewFlagSet("fleetcam "+command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("config", "", "YAML configuration file (see configs/fleetcam.yaml)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return configs.Config{}, err
		}
		return configs.Config{}, fmt.Errorf("%w\n%s", err, usage)
	}
	if fs.NArg() > 0 {
		return configs.Config{}, fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), usage)
	}
	return load(*configPath, getenv)
}

func newLogger(level string, w io.Writer) *slog.Logger {
	var l slog.Level
	l.UnmarshalText([]byte(strings.ToUpper(level)))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// app is a running fleetcam.
type app struct {
	log    *slog.Logger
	db     *store.DB
	hooks  *webhooks.Dispatcher
	broker *broker.Server
	// stopMedia ends the media service and waits for it.
	stopMedia func()
	http      *http.Server
	httpAddr  net.Addr
	pprof     *http.Server // nil unless debug.pprofAddr is set
	pprofAddr string
	// metrics serves /metrics when metrics.addr is set; nil otherwise.
	metrics     *http.Server
	metricsAddr string
	ready       atomic.Bool
	done        chan error
	// background runs the retention purge, the alarm mailer and the offline
	// alarm watch until stop.
	background     sync.WaitGroup
	stopBackground context.CancelFunc
	// cluster is this node's side of a cluster; nil when fleetcam runs
	// alone (cluster.natsURL empty).
	cluster *clusterNode
}

// start binds the listeners' addresses before it touches the data dir (a
// port in use must not leave a new store and first partner behind), then
// opens the store, ensures the bootstrap partner and starts every listener.
// The configuration is already validated (configs.Load).
func start(ctx context.Context, cfg configs.Config, log *slog.Logger, stdout io.Writer) (*app, error) {
	// The HTTP listener comes first: without a publicURL, the signed media
	// URLs the API hands to devices and callers carry its actual address.
	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		return nil, fmt.Errorf("http.addr %s: %w", cfg.HTTP.Addr, err)
	}
	if err := probeListeners(cfg); err != nil {
		ln.Close()
		return nil, err
	}
	bucket, err := openMediaBucket(ctx, cfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	db, err := openConfiguredStore(ctx, cfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	fail := func(err error) (*app, error) {
		ln.Close()
		db.Close()
		return nil, err
	}
	key, err := loadSigningKey(cfg.Auth.SigningKey, cfg.DataDir)
	if err != nil {
		return fail(err)
	}
	if cfg.Cluster.Enabled() {
		if err := checkClusterKeys(ctx, cfg, db, key); err != nil {
			return fail(err)
		}
	}
	if err := ensureBootstrapPartner(db, cfg, log); err != nil {
		return fail(err)
	}
	reg := prometheus.NewRegistry()
	// On a node of a cluster every metric carries the node's id, so that
	// the nodes' series stay apart wherever they are gathered together.
	var metrics prometheus.Registerer = reg
	if cfg.Cluster.Enabled() {
		metrics = prometheus.WrapRegistererWith(prometheus.Labels{"node": cfg.Cluster.NodeID}, reg)
	}
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		store.NewDiskUsage(db))
	if c, ok := db.Engine().(prometheus.Collector); ok {
		metrics.MustRegister(c) // PostgreSQL's round trips and statements
	}
	// The API keeps media in media.dir, by default <dataDir>/media
	// (cloudapi.Deps.Blobs), unless it is in a bucket.
	mediaDir := cfg.MediaDir()
	if bucket != nil {
		mediaDir = ""
	}
	if err := registerProcessMetrics(metrics, mediaDir); err != nil {
		return fail(err)
	}

	apiCfg := cfg
	apiCfg.HTTP.Addr = ln.Addr().String()

	a := &app{log: log, db: db, done: make(chan error, 1)}
	a.broker, err = broker.New(cfg, db, log, metrics, nil)
	if err != nil {
		return fail(err)
	}
	link := deviceLink{b: a.broker, devices: a.broker, log: log}
	nodes := nodesView{b: a.broker, id: cfg.Cluster.NodeID, started: time.Now().UTC().Truncate(time.Second)}
	if nodes.id == "" {
		host, _ := os.Hostname()
		nodes.id = configs.DefaultNodeID(host)
	}
	if cfg.Cluster.Enabled() {
		if a.cluster, err = joinCluster(cfg, a.broker, log); err != nil {
			return fail(err)
		}
		alone := fail
		fail = func(err error) (*app, error) { a.cluster.close(); return alone(err) }
		link.devices = a.cluster.node
		nodes.node = a.cluster.node
	}
	deps := cloudapi.Deps{Config: apiCfg, Store: db, Key: key, Logger: log, Registry: reg,
		Registerer: metrics, Ready: a.ready.Load, Commander: link, Presence: link, Cluster: nodes}
	if a.cluster != nil {
		deps.Relay = nodeRelay{a.cluster.node}
	}
	if err := withMediaBucket(&deps, bucket, cfg); err != nil {
		return fail(err)
	}
	api, err := cloudapi.New(deps)
	if err != nil {
		return fail(err)
	}
	// Device messages go through the broker's ingest (broker.IngestEvent
	// and its siblings); after each committed event, and when a device
	// reports an upload the cloud lacks, the API's media service looks for
	// files to fetch.
	a.broker.Notify = broker.Notifiers{
		Event:        func(store.Device, protocol.Event) { api.WakeMedia() },
		MediaMissing: func(store.Device, protocol.MediaReady) { api.WakeMedia() },
	}
	a.hooks, err = webhooks.New(cfg.Webhooks, db, key, log, metrics, nil)
	if err != nil {
		return fail(err)
	}
	// Alone, webhook delivery starts here and stops in stop; in a cluster
	// it is a job of one node at a time, below.
	if a.cluster == nil {
		if err := a.hooks.Start(ctx); err != nil {
			return fail(err)
		}
	}
	if err := a.broker.Start(); err != nil {
		a.hooks.Close()
		return fail(fmt.Errorf("mqtt: %w", err))
	}
	mctx, cancelMedia := context.WithCancel(context.Background())
	mediaDone := make(chan struct{})
	go func() { defer close(mediaDone); api.RunMedia(mctx) }()
	a.stopMedia = func() { cancelMedia(); <-mediaDone }
	a.httpAddr = ln.Addr()
	a.http = api.HTTPServer()
	go func() {
		if err := a.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.done <- err
		}
	}()
	bg, cancelBG := context.WithCancel(ctx)
	a.stopBackground = cancelBG
	purger := store.NewPurger(db, store.PurgerOptions{Interval: cfg.Retention.Interval,
		WebhookDeliveryDays: cfg.Retention.WebhookDeliveryDays, Logger: log, Registerer: metrics, Purged: api.WakeMedia})
	mailer := alarmmail.New(alarmmail.Options{Store: db, SMTP: cfg.SMTP, Logger: log, Registerer: metrics, Poll: cfg.SMTP.PollInterval})
	eventMailer := eventmail.New(eventmail.Options{Store: db, SMTP: cfg.SMTP, PublicURL: cfg.PublicURL, Logger: log,
		Registerer: metrics, Poll: cfg.SMTP.PollInterval})
	jobs := []job{
		{"retention", purger.Run},
		{"alarm-mail", mailer.Run},
		{"event-mail", eventMailer.Run},
		{"offline-alarms", func(ctx context.Context) {
			db.WatchOffline(ctx, cfg.Devices.OfflineAlarmAfter, min(cfg.Devices.OfflineAlarmAfter/4, 15*time.Minute), log)
		}},
	}
	if a.cluster != nil {
		jobs = append(jobs, job{"dead-nodes", func(ctx context.Context) {
			sweepDeadNodes(ctx, db, a.cluster.locks, a.cluster.node.Gone, cfg.Cluster.NodeID, cfg.Cluster.JobLockRetry, log)
		}})
		// The dispatcher keeps its queue and cursor in memory: one node
		// at a time fans out, delivers and prunes the outbox.
		jobs = append(jobs, job{"webhooks", func(ctx context.Context) {
			for err := a.hooks.Start(ctx); err != nil; err = a.hooks.Start(ctx) {
				log.Error("start webhook delivery; trying again", "err", err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(cfg.Cluster.JobLockRetry):
				}
			}
			<-ctx.Done()
			a.hooks.Close()
		}})
	}
	a.runJobs(bg, jobs)
	if cfg.Metrics.Addr != "" {
		if a.metricsAddr, err = a.startMetrics(cfg.Metrics.Addr, api); err != nil {
			a.stop(cfg.HTTP.ShutdownTimeout)
			return nil, err
		}
	}
	if cfg.Debug.PprofAddr != "" {
		if a.pprofAddr, err = a.startPprof(cfg.Debug.PprofAddr); err != nil {
			a.stop(cfg.HTTP.ShutdownTimeout)
			return nil, err
		}
	}
	a.ready.Store(true)
	log.Info("fleetcam started", "cloud", cfg.Cloud, "node", cfg.Cluster.NodeID, "http", a.httpAddr.String(), "mqtt", a.broker.Addr(), "data", cfg.DataDir,
		"pprof", a.pprofAddr, "metrics", a.metricsAddr, "everyInterface", everyInterface(a.httpAddr.String()) || everyInterface(a.broker.Addr()))
	if everyInterface(a.httpAddr.String()) || everyInterface(a.broker.Addr()) {
		log.Warn("listening on every network interface: other machines can reach the API and the broker; " +
			"set http.addr and mqtt.addr (FLEETCAM_HTTP_ADDR, FLEETCAM_MQTT_ADDR) to 127.0.0.1:PORT to keep fleetcam to this machine")
	}
	return a, nil
}

// everyInterface reports whether the listener address addr (host:port)
// accepts connections on every network interface.
func everyInterface(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

// probeListeners binds and releases every other configured listener
// address and loads the MQTT TLS certificate, so that a port in use or a
// missing certificate stops fleetcam before the data dir is created.
func probeListeners(cfg configs.Config) error {
	for _, l := range []struct{ setting, addr string }{
		{"mqtt.addr", cfg.MQTT.Addr}, {"mqtt.wsAddr", cfg.MQTT.WSAddr},
		{"mqtt.tlsAddr", cfg.MQTT.TLSAddr}, {"debug.pprofAddr", cfg.Debug.PprofAddr},
		{"metrics.addr", cfg.Metrics.Addr},
	} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			return fmt.Errorf("%s %s: %w", l.setting, l.addr, err)
		}
		ln.Close()
	}
	if cfg.MQTT.TLSAddr != "" {
		if _, err := tls.LoadX509KeyPair(cfg.MQTT.TLSCert, cfg.MQTT.TLSKey); err != nil {
			return fmt.Errorf("mqtt.tlsCert/mqtt.tlsKey: %w", err)
		}
	}
	return nil
}

// startMetrics serves the Prometheus metrics on their own listener and
// returns its address.
func (a *app) startMetrics(addr string, api *cloudapi.Server) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("metrics.addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", api.MetricsHandler())
	a.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := a.metrics.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("metrics listener failed", "err", err)
		}
	}()
	return ln.Addr().String(), nil
}

// startPprof serves the runtime profiles on their own listener and returns its address.
func (a *app) startPprof(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("debug.pprofAddr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	a.pprof = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := a.pprof.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("pprof listener failed", "err", err)
		}
	}()
	a.log.Warn("runtime profiles are served; keep debug.pprofAddr on loopback", "pprof", ln.Addr().String())
	return ln.Addr().String(), nil
}

// stop shuts the listeners down, waits for requests in flight up to timeout,
// stops the media service, webhook delivery (what is in flight is sent
// again after the next start) and the background jobs, leaves the cluster
// and closes the store.
func (a *app) stop(timeout time.Duration) error {
	a.ready.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := a.http.Shutdown(ctx)
	if a.pprof != nil {
		_ = a.pprof.Close()
	}
	if a.metrics != nil {
		_ = a.metrics.Close()
	}
	if berr := a.broker.Close(); err == nil {
		err = berr
	}
	a.stopMedia()
	if a.cluster == nil {
		a.hooks.Close()
	}
	a.stopBackground()
	a.background.Wait()
	if a.cluster != nil {
		a.cluster.close()
	}
	if cerr := a.db.Close(); err == nil {
		err = cerr
	}
	return err
}
