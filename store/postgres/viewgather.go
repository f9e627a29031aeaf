package postgres

import (
	"context"
	"slices"
	"strconv"
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
// and go together in the next round trip, in which each kind of read is
// one statement over all their devices (viewBatch). In a connect storm a
// round trip then carries the reads of dozens of devices: the system
// calls, the pool's hand-over, the server's implicit transaction and the
// start of each statement are paid once for all of them, where each view
// paid them alone. The round trip runs as one implicit read-only
// REPEATABLE READ transaction (viewPoolConfig), so every view of it reads
// one snapshot.
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
	v := queueViews(b, group)
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	if err := v.read(br); err != nil {
		return err
	}
	return classify(br.Close())
}

// viewBatch is what the views of one round trip read, each kind of read
// one statement over every device that needs it: the device's rows for
// an authentication (authRows); the device's rows, queued commands and
// driver assignments for the view of what a device is sent when it
// connects (viewRows, viewQueued, prefetchAssignments); and the drivers
// whose credentials its configuration carries when it is due
// (viewCredentials, viewActiveOrgs, viewActiveDrivers). Each view is
// given what was read of its own device and organization only.
type viewBatch struct {
	auth, device, credentials devicesViews
}

// devicesViews are views by their device, and the devices in the order
// they were first named.
type devicesViews struct {
	imeis []string
	views map[string][]*viewRead
}

// add names r's device.
func (d *devicesViews) add(r *viewRead) {
	if d.views == nil {
		d.views = map[string][]*viewRead{}
	}
	if _, ok := d.views[r.imei]; !ok {
		d.imeis = append(d.imeis, r.imei)
	}
	d.views[r.imei] = append(d.views[r.imei], r)
}

// keep gives row r, read for device imei, to the device's views.
func (d *devicesViews) keep(imei string, k memoKey, r memoRow) {
	for _, v := range d.views[imei] {
		v.t.remember(k, r)
	}
}

// queueViews queues the reads of the views of group.
func queueViews(b *pgx.Batch, group []*viewRead) *viewBatch {
	v := &viewBatch{}
	for _, r := range group {
		if r.reads&store.ViewAuthentication != 0 {
			v.auth.add(r)
			continue
		}
		v.device.add(r)
		if r.reads&store.ViewDriverCredentials != 0 {
			v.credentials.add(r)
		}
	}
	if len(v.auth.imeis) > 0 {
		b.Queue(authRows.sql, v.auth.imeis)
	}
	if len(v.device.imeis) > 0 {
		b.Queue(viewRows.sql, v.device.imeis)
		b.Queue(viewQueued, v.device.imeis)
		b.Queue(prefetchAssignments, v.device.imeis)
	}
	if len(v.credentials.imeis) > 0 {
		b.Queue(viewCredentials.sql, v.credentials.imeis)
		b.Queue(viewActiveOrgs, v.credentials.imeis)
		b.Queue(viewActiveDrivers, v.credentials.imeis)
	}
	return v
}

// read gives each view the answers to queueViews' reads for its device.
func (v *viewBatch) read(br pgx.BatchResults) error {
	if len(v.auth.imeis) > 0 {
		if err := authRows.each(br, v.auth.keep); err != nil {
			return err
		}
	}
	if len(v.device.imeis) == 0 {
		return nil
	}
	if err := viewRows.each(br, v.device.keep); err != nil {
		return err
	}
	all := &tx{}
	if err := all.readQueuedAhead(br, v.device.imeis); err != nil {
		return err
	}
	if err := all.readAssignmentsAhead(br, v.device.imeis); err != nil {
		return err
	}
	for imei, views := range v.device.views {
		for _, r := range views {
			r.t.memo.queued = map[string][]store.QueuedCommand{imei: slices.Clone(all.memo.queued[imei])}
			r.t.memo.assignments = map[string][]store.DriverAssignment{imei: slices.Clone(all.memo.assignments[imei])}
		}
	}
	if len(v.credentials.imeis) == 0 {
		return nil
	}
	if err := all.readSpecs(br, []prefetchSpec{viewCredentials}, nil); err != nil {
		return err
	}
	due, drivers, err := readActiveDriversAhead(br)
	if err != nil {
		return err
	}
	for imei, views := range v.credentials.views {
		for _, r := range views {
			for _, a := range all.memo.assignments[imei] {
				k := memoKey{tableDrivers, strconv.FormatInt(a.DriverID, 10)}
				if row, ok := all.memo.rows[k]; ok {
					r.t.remember(k, row)
				}
			}
			r.t.memo.activeDrivers = map[int64][]store.Driver{}
			if org, ok := due[imei]; ok {
				r.t.memo.activeDrivers[org] = append([]store.Driver{}, drivers[org]...)
			}
		}
	}
	return nil
}
