package webhooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/prometheus/client_golang/prometheus"
)

// Tuning that is not configuration.
const (
	// fanOutBatch is how many messages one fan-out transaction handles.
	fanOutBatch = 256
	// pollInterval bounds how long the dispatcher sleeps without a wake-up.
	pollInterval = time.Second
	// fanOutEvery is the shortest time between two fan-outs.
	fanOutEvery = 50 * time.Millisecond
	// cursorSaveEvery is how often a cursor advanced past messages that
	// needed no delivery is written down.
	cursorSaveEvery = 5 * time.Second
	// minWait keeps the scheduler from spinning on a clock that does not move.
	minWait = 5 * time.Millisecond
	// SecretGrace is how long the previous secret keeps signing after a rotation.
	SecretGrace = 24 * time.Hour
	// pruneBatch is how many consumed messages one prune transaction deletes
	// at most (prune.go).
	pruneBatch = 2048
	// pruneRounds is how many prune transactions one pass of the scheduler
	// makes at most; a larger backlog is taken up again fanOutEvery later.
	pruneRounds = 8
	// pruneEvery is the shortest time between two prunes without a backlog.
	pruneEvery = time.Second
)

// ErrStarted is returned by Start on a dispatcher that already runs.
var ErrStarted = errors.New("webhooks: dispatcher already started")

// Dispatcher turns outbox messages into signed deliveries and delivers them.
// Build it with New, run it with Start and stop it with Close.
type Dispatcher struct {
	cfg     configs.Webhooks
	db      *store.DB
	key     []byte
	log     *slog.Logger
	now     func() time.Time
	client  *http.Client
	metrics *metrics

	nudge   chan struct{}
	jobs    chan job
	records chan *attemptRecord
	results chan result

	mu         sync.Mutex // guards q for the metrics collector
	q          *queue
	inflight   map[int64]job
	generation int64

	// cursor is the last message fanned out; it runs ahead of the stored
	// cursor over messages that needed no delivery (saveCursor).
	cursor      int64
	cursorDirty bool
	cursorSaved time.Time
	// stored is the cursor as last committed; prunedTo is the stored
	// cursor up to which consumed messages are known to be pruned.
	stored       int64
	prunedTo     int64
	pruneBacklog bool
	lastPrune    time.Time

	randMu sync.Mutex
	rand   *rand.Rand

	// settle is where tests observe the scheduler at rest: a channel
	// received on it wakes the scheduler as Nudge does and is closed after
	// the next pass that fanned out every message, with no attempt in
	// flight and none due by the dispatcher's clock. Nothing sends on it
	// outside tests.
	settle chan chan struct{}

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New builds a dispatcher over db. key is the server key organization
// secrets are derived from; reg receives the fleetcam_webhook_* metrics;
// now is the clock backoff is scheduled by (time.Now when nil).
func New(cfg configs.Webhooks, db *store.DB, key []byte, log *slog.Logger, reg prometheus.Registerer, now func() time.Time) (*Dispatcher, error) {
	if len(key) < 16 {
		return nil, fmt.Errorf("webhooks: the server key must be at least 16 bytes")
	}
	if cfg.Workers < 1 {
		cfg.Workers = 1
	}
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = time.Second
	}
	if cfg.MaxBackoff < cfg.InitialBackoff {
		cfg.MaxBackoff = cfg.InitialBackoff
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	d := &Dispatcher{
		cfg: cfg, db: db, key: key, log: log.With("component", "webhooks"), now: now,
		client:   newClient(cfg.RequestTimeout, cfg.AllowPrivateTargets),
		nudge:    make(chan struct{}, 1),
		jobs:     make(chan job, cfg.Workers),
		records:  make(chan *attemptRecord, cfg.Workers),
		results:  make(chan result, cfg.Workers),
		q:        newQueue(),
		inflight: map[int64]job{},
		rand:     rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		settle:   make(chan chan struct{}),
	}
	d.metrics = newMetrics(reg, d.oldestPendingAge)
	return d, nil
}

// Start loads the queue and starts the scheduler and the workers; they run
// until ctx ends or Close is called. A closed dispatcher starts again.
func (d *Dispatcher) Start(ctx context.Context) error {
	if d.cancel != nil {
		return ErrStarted
	}
	if err := d.reload(); err != nil {
		return err
	}
	if err := d.loadCursor(); err != nil {
		return err
	}
	d.cursorSaved = d.now()
	ctx, d.cancel = context.WithCancel(ctx)
	sig, stop := d.db.OutboxSignal()
	d.wg.Add(2 + d.cfg.Workers)
	for range d.cfg.Workers {
		go d.work(ctx)
	}
	go d.recorder(ctx)
	go func() {
		defer d.wg.Done()
		defer stop()
		d.run(ctx, sig)
	}()
	return nil
}

// Close stops the dispatcher and waits for its goroutines; attempts in
// flight are abandoned without being recorded, so they are made again after
// the next Start, of this dispatcher (a node of a cluster that loses the
// webhook job and takes it again) or of another. The store stays open.
func (d *Dispatcher) Close() error {
	if d.cancel == nil {
		return nil
	}
	d.cancel()
	d.wg.Wait()
	d.cancel = nil
	// What the stopped goroutines left behind is the store's to tell
	// again: Start reloads the queue from it.
	for drained := false; !drained; {
		select {
		case <-d.jobs:
		case <-d.records:
		case <-d.results:
		default:
			drained = true
		}
	}
	d.mu.Lock()
	clear(d.inflight)
	d.mu.Unlock()
	d.client.CloseIdleConnections()
	return nil
}

// Nudge wakes the scheduler: new messages are fanned out, consumed ones
// pruned and due deliveries attempted now, by the dispatcher's clock.
func (d *Dispatcher) Nudge() {
	select {
	case d.nudge <- struct{}{}:
	default:
	}
}

// run is the scheduler: it fans messages out, hands due deliveries to the
// workers and applies their results. It alone changes the queue. Fan-outs
// are at least fanOutEvery apart, so a busy ingest does not pay for one
// dispatcher transaction per commit.
func (d *Dispatcher) run(ctx context.Context, sig <-chan struct{}) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	want := true // look for new messages and outside queue changes
	var last time.Time
	var settled []chan struct{} // see settle
	for {
		if want && time.Since(last) >= fanOutEvery {
			d.fanOutAll()
			d.reloadIfChanged()
			want, last = d.prune(), time.Now()
		}
		wait := d.schedule()
		if want {
			wait = min(wait, fanOutEvery-time.Since(last))
		}
		if len(settled) > 0 && !want && d.idle() {
			for _, c := range settled {
				close(c)
			}
			settled = nil
		}
		timer.Reset(max(wait, minWait))
		select {
		case <-ctx.Done():
			d.saveCursor(true)
			return
		case <-d.nudge:
			want, last, d.lastPrune = true, time.Time{}, time.Time{}
		case <-sig:
			want = true
		case <-timer.C:
			want = true
		case r := <-d.results:
			d.apply(r)
		case c := <-d.settle:
			settled = append(settled, c)
			want, last = true, time.Time{}
		}
	}
}

// idle reports whether no attempt is in flight. Right after schedule it
// also means none is due: schedule hands every due delivery to a free worker.
func (d *Dispatcher) idle() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.inflight) == 0
}

// schedule hands every due delivery a free worker can take to the workers
// and returns how long to sleep before something else becomes due.
func (d *Dispatcher) schedule() time.Duration {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	free := d.cfg.Workers - len(d.inflight)
	perEndpoint := max(1, d.cfg.Workers/2)
	for _, j := range d.q.pick(now, free, perEndpoint) {
		d.inflight[j.id] = j
		d.jobs <- j // never blocks: at most Workers jobs are outstanding
	}
	d.metrics.queueDepth.Set(float64(d.q.depth))
	wait := pollInterval
	if t := d.q.nextWake(now); !t.IsZero() {
		wait = min(wait, t.Sub(now))
	}
	return wait
}

// apply records a worker's result in the schedule.
func (d *Dispatcher) apply(r result) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.inflight, r.job.id)
	d.q.finish(r)
	d.metrics.queueDepth.Set(float64(d.q.depth))
}

// reload rebuilds the schedule from the store, keeping attempts in flight.
func (d *Dispatcher) reload() error {
	q := newQueue()
	var gen int64
	err := d.db.View(context.Background(), func(tx *store.Tx) error {
		gen = tx.OutboxGeneration()
		for _, e := range tx.PendingDeliveries() {
			q.add(e)
		}
		for k, ep := range q.endpoints {
			s, err := tx.WebhookEndpoint(k.org, k.url)
			if err != nil {
				return err
			}
			ep.setState(s)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("webhooks: load queue: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, j := range d.inflight {
		q.markBusy(j)
	}
	q.rebuild()
	d.q, d.generation = q, gen
	d.metrics.queueDepth.Set(float64(q.depth))
	return nil
}

// reloadIfChanged reloads the schedule when something outside the
// dispatcher (a redelivery, an endpoint enabled again) changed the queue.
func (d *Dispatcher) reloadIfChanged() {
	var gen int64
	d.db.View(context.Background(), func(tx *store.Tx) error { gen = tx.OutboxGeneration(); return nil })
	d.mu.Lock()
	changed := gen != d.generation
	d.mu.Unlock()
	if changed {
		if err := d.reload(); err != nil {
			d.log.Error("reload webhook queue", "err", err)
		}
	}
}

// oldestPendingAge is the age in seconds of the oldest waiting delivery.
func (d *Dispatcher) oldestPendingAge() float64 {
	d.mu.Lock()
	t := d.q.oldest()
	d.mu.Unlock()
	if t.IsZero() {
		return 0
	}
	return max(0, d.now().Sub(t).Seconds())
}

// jitter returns a random duration in [d/2, d].
func (d *Dispatcher) jitter(v time.Duration) time.Duration {
	if v <= 1 {
		return v
	}
	d.randMu.Lock()
	defer d.randMu.Unlock()
	return v/2 + time.Duration(d.rand.Int64N(int64(v/2)+1))
}
