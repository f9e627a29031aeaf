package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/devicesim"
)

// window records acknowledged publishes while it is open: counts by topic,
// GPS fixes and every latency, for exact percentiles.
type window struct {
	open    atomic.Bool
	mu      sync.Mutex
	began   time.Time
	took    time.Duration
	count   map[string]int
	fixes   int
	lat     []time.Duration
	batch   int // fixes per GPS message
	onAck   func(devicesim.Ack)
	stopped bool
}

func newWindow(gpsBatch int) *window {
	return &window{count: map[string]int{}, batch: max(gpsBatch, 1)}
}

// ack is the fleet's OnAck.
func (w *window) ack(a devicesim.Ack) {
	if w.onAck != nil {
		w.onAck(a)
	}
	if !w.open.Load() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.count[a.Topic]++
	if a.Topic == protocol.TopicGPS {
		w.fixes += w.batch
	}
	w.lat = append(w.lat, a.Latency)
}

// start opens the window, forgetting anything recorded before.
func (w *window) start() {
	w.mu.Lock()
	w.count, w.fixes, w.lat, w.stopped = map[string]int{}, 0, w.lat[:0], false
	w.began = time.Now()
	w.mu.Unlock()
	w.open.Store(true)
}

// stop closes the window and returns what it recorded.
func (w *window) stop() measured {
	w.open.Store(false)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.took = time.Since(w.began)
	m := measured{took: w.took, fixes: w.fixes}
	for _, v := range w.count {
		m.msgs += v
	}
	m.lat = percentiles(w.lat)
	return m
}

// measured is one window's result.
type measured struct {
	took  time.Duration
	msgs  int
	fixes int
	lat   latency
}

func (m measured) rate() float64    { return float64(m.msgs) / m.took.Seconds() }
func (m measured) fixRate() float64 { return float64(m.fixes) / m.took.Seconds() }

// latency holds exact percentiles of a sample.
type latency struct {
	n             int
	p50, p99, max time.Duration
}

func percentiles(d []time.Duration) latency {
	if len(d) == 0 {
		return latency{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return latency{n: len(s), p50: at(0.50), p99: at(0.99), max: s[len(s)-1]}
}

// median returns the median of vs (the lower middle for an even count).
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// medianMeasured picks the window with the median message rate.
func medianMeasured(ms []measured) measured {
	s := slices.Clone(ms)
	slices.SortFunc(s, func(a, b measured) int {
		switch {
		case a.rate() < b.rate():
			return -1
		case a.rate() > b.rate():
			return 1
		}
		return 0
	})
	return s[(len(s)-1)/2]
}

// fleetRun is a load fleet running in the background.
type fleetRun struct {
	fleet  *devicesim.LoadFleet
	stats  *devicesim.Stats
	cancel context.CancelFunc
	done   chan struct{}
}

// startFleet starts a load fleet with o; stop ends it.
func startFleet(ctx context.Context, o devicesim.LoadOptions) (*fleetRun, error) {
	if o.Stats == nil {
		o.Stats = devicesim.NewStats()
	}
	f, err := devicesim.NewLoadFleet(o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &fleetRun{fleet: f, stats: o.Stats, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		_ = f.Run(ctx)
	}()
	return r, nil
}

// stop disconnects the fleet and waits for it.
func (r *fleetRun) stop() devicesim.Snapshot {
	r.cancel()
	<-r.done
	return r.stats.Snapshot()
}

// waitConnected waits until n devices are online, printing progress to
// log, or fails after limit.
func (r *fleetRun) waitConnected(ctx context.Context, n int, limit time.Duration, log io.Writer) error {
	deadline := time.Now().Add(limit)
	last := time.Now()
	for {
		s := r.stats.Snapshot()
		if s.Online >= int64(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d devices connected after %s (last error: %s)", s.Online, n, limit, s.LastError)
		}
		if time.Since(last) >= 2*time.Second {
			fmt.Fprintf(log, "    … %d/%d connected, %d connect errors\n", s.Online, n, s.ConnectErrors)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// measure runs n windows of d each and returns them.
func measure(ctx context.Context, w *window, n int, d time.Duration) ([]measured, error) {
	var out []measured
	for range n {
		w.start()
		if err := sleep(ctx, d); err != nil {
			w.stop()
			return out, err
		}
		out = append(out, w.stop())
	}
	return out, nil
}
