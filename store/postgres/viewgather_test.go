package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fleetcam/fleetcam/store"
)

// The views that start while every connection of the views' pool is busy
// wait, and then read in one round trip together; each reads its own
// device's records, and a view whose caller gives up while it waits
// returns at once without holding the others back.
func TestViewsGathered(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	g := e.gather
	org := map[string]int64{f.imeis[0]: f.orgA, f.imeis[1]: f.orgA, f.imeis[2]: f.orgB}

	// Every connection of the views' pool is taken, so the first views
	// to start (one for each connection) wait for one to send their
	// reads, and every later view waits for them.
	held := make([]*pgxpool.Conn, e.views.Config().MaxConns)
	for i := range held {
		c, err := e.views.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		held[i] = c
	}
	readsEnded(t, e) // the ROLLBACKs of earlier reads count where they were sent
	trips0, stmts0 := e.sent.trips.Load(), e.sent.statements.Load()

	const views = 40
	var wg sync.WaitGroup
	errs := make([]error, views)
	view := func(i int) {
		imei := f.imeis[i%len(f.imeis)]
		var reads store.ViewReads
		if i%2 == 1 {
			reads = store.ViewAuthentication
		}
		wg.Go(func() {
			errs[i] = e.ViewDevice(t.Context(), imei, reads, func(r store.Records) error {
				dev, err := r.Devices().Get(imei)
				if err != nil {
					return err
				}
				if dev.IMEI != imei || dev.OrganizationID != org[imei] {
					return fmt.Errorf("read device %s of organization %d, want %s of %d", dev.IMEI, dev.OrganizationID, imei, org[imei])
				}
				if reads&store.ViewAuthentication != 0 {
					_, err := r.DeviceCredentials().Get(imei)
					if errors.Is(err, store.ErrNotFound) {
						err = nil
					}
					return err
				}
				_, err = r.Organizations().Get(dev.OrganizationID)
				return err
			})
		})
	}
	// The first views, device views, one for each connection.
	for i := range g.most {
		view(2 * i)
	}
	waitFor(t, "the first views sending", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.sending == g.most
	})
	for i := range views {
		if i%2 == 1 || i >= 2*g.most {
			view(i)
		}
	}
	waiting := func(n int) func() bool {
		return func() bool {
			g.mu.Lock()
			defer g.mu.Unlock()
			return g.sending == g.most && len(g.waiting) == n
		}
	}
	waitFor(t, "every later view waiting", waiting(views-g.most))
	// A view whose caller gives up while it waits.
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan error, 1)
	go func() {
		gaveUp <- e.ViewDevice(ctx, f.imeis[0], 0, func(store.Records) error { return nil })
	}()
	waitFor(t, "the view that gives up waiting", waiting(views-g.most+1))
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("a view whose caller gave up returned %v, want context.Canceled", err)
	}
	for _, c := range held {
		c.Release()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("view %d: %v", i, err)
		}
	}
	// One round trip for each of the first views, three statements each
	// (the device's rows, its queued commands, its driver assignments),
	// and one for all the others but the one that gave up, whose reads
	// are not sent: the same three statements, and one for every
	// authentication.
	readsEnded(t, e)
	trips, stmts := e.sent.trips.Load()-trips0, e.sent.statements.Load()-stmts0
	if want := uint64(g.most + 1); trips != want {
		t.Errorf("%d views read in %d round trips, want %d", views, trips, want)
	}
	if want := uint64(g.most*3 + 3 + 1); stmts != want {
		t.Errorf("%d views sent %d statements, want %d", views, stmts, want)
	}
}

// waitFor waits until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after two minutes", what)
		}
		time.Sleep(time.Millisecond)
	}
}
