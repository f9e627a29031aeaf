package postgres

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// viewsPerTrip bounds the device views whose reads share one round trip.
const viewsPerTrip = 64

// viewGather sends the reads of device views (ViewDevice) to the server.
// A view that starts while a connection of the views' pool is free sends
// its reads at once; the views that start while every one is busy wait
// and go together in the next round trip, each its statements of one
// device (queueView) one after the other in one pipeline. In a connect
// storm a round trip then carries the reads of dozens of devices: the
// system calls, the pool's hand-over and the server's implicit
// transaction are paid once for all of them, where each view paid them
// alone. The pipeline runs as one implicit read-only REPEATABLE READ
// transaction (viewPoolConfig), so every view of it reads one snapshot.
type viewGather struct {
	e       *Engine
	most    int // round trips at once: the views' pool's connections
	mu      sync.Mutex
	waiting []*viewRead
	sending int
}

// viewRead is one view waiting for its reads.
type viewRead struct {
	ctx   context.Context
	t     *tx
	imei  string
	reads store.ViewReads
	done  chan error
}

// readAhead reads what the view of device imei reads (queueView) into the
// memo of a transaction that holds no connection, and returns it: what
// the view reads beyond that is not answered (pipe.missed).
func (g *viewGather) readAhead(ctx context.Context, imei string, reads store.ViewReads) (*tx, error) {
	r := &viewRead{
		ctx:   ctx,
		t:     &tx{ctx: ctx, pg: &pipe{closed: true, ahead: true}, node: g.e.node, demand: g.e.demand},
		imei:  imei,
		reads: reads,
		done:  make(chan error, 1),
	}
	g.mu.Lock()
	g.waiting = append(g.waiting, r)
	group := g.take()
	g.mu.Unlock()
	if group != nil {
		g.send(group)
	}
	select {
	case err := <-r.done:
		return r.t, err
	case <-ctx.Done():
		return nil, classify(ctx.Err())
	}
}

// take returns the views that go in the next round trip, nil when every
// connection is busy or none waits. g.mu is held.
func (g *viewGather) take() []*viewRead {
	if g.sending >= g.most || len(g.waiting) == 0 {
		return nil
	}
	n := min(len(g.waiting), viewsPerTrip)
	group := g.waiting[:n:n]
	g.waiting = g.waiting[n:]
	if len(g.waiting) == 0 {
		g.waiting = nil
	}
	g.sending++
	return group
}

// send reads ahead for group in one round trip and tells each view; then
// the views that waited meanwhile go, on a goroutine of their own.
func (g *viewGather) send(group []*viewRead) {
	err := g.e.readViews(group)
	for _, r := range group {
		r.done <- err
	}
	g.mu.Lock()
	g.sending--
	next := g.take()
	g.mu.Unlock()
	if next != nil {
		go g.send(next)
	}
}

// readViews sends the reads of every view of group still waited for in
// one pipeline and keeps each view's answers in its transaction's memo.
// The round trip stops once every view of it has stopped waiting (its
// context ended).
func (e *Engine) readViews(group []*viewRead) error {
	group = slices.DeleteFunc(slices.Clone(group), func(r *viewRead) bool { return r.ctx.Err() != nil })
	if len(group) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var waiting atomic.Int32
	waiting.Store(int32(len(group)))
	for _, r := range group {
		stop := context.AfterFunc(r.ctx, func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	conn, err := e.views.Acquire(ctx)
	if err != nil {
		return classify(err)
	}
	defer conn.Release()
	b := &pgx.Batch{}
	reads := make([]func(*tx, pgx.BatchResults) error, len(group))
	for i, r := range group {
		reads[i] = queueView(b, r.imei, r.reads)
	}
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	for i, r := range group {
		if err := reads[i](r.t, br); err != nil {
			return err
		}
	}
	return classify(br.Close())
}
