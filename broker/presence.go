package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// presenceRepairEvery is how often the broker writes again the presence
// records that could not be committed (repairPresence).
const presenceRepairEvery = 5 * time.Second

// unsavedOffline holds connections whose presence record is not
// committed yet: an ended connection's offline record, or a live one's
// online record, that failed (the store unreachable, or a pool connection
// it lost, when the device came or went). The broker writes them again
// (repairPresence, RestorePresence).
type unsavedOffline struct {
	mu    sync.Mutex
	links map[*link]struct{}
}

func newUnsavedOffline() *unsavedOffline { return &unsavedOffline{links: map[*link]struct{}{}} }

func (u *unsavedOffline) add(l *link) {
	u.mu.Lock()
	u.links[l] = struct{}{}
	u.mu.Unlock()
}

func (u *unsavedOffline) saved(l *link) {
	u.mu.Lock()
	delete(u.links, l)
	u.mu.Unlock()
}

func (u *unsavedOffline) list() []*link {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]*link, 0, len(u.links))
	for l := range u.links {
		out = append(out, l)
	}
	return out
}

// current lists the devices' current connections.
func (r *registry) current() []*link {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*link, 0, len(r.devices))
	for _, l := range r.devices {
		out = append(out, l)
	}
	return out
}

// recordOffline submits the offline record of the ended connection l;
// until it is committed, l is kept for RestorePresence.
func (s *Server) recordOffline(ctx context.Context, l *link) <-chan error {
	s.unsaved.add(l)
	return s.committer.Submit(ctx, deviceActor(&l.dev), func(tx *store.Tx) error {
		if err := s.markOffline(tx, l); err != nil {
			return err
		}
		tx.OnCommit(func() { s.unsaved.saved(l) })
		return nil
	})
}

// RestorePresence makes the store say again what this broker's
// connections are, after it may have stopped saying it: the devices this
// broker holds are recorded online on their connections, and the
// connections that ended while their offline record could not be
// committed are recorded offline. A node of a cluster calls it when it
// takes its life lock again after losing it (an outage of PostgreSQL),
// since meanwhile another node may have taken it for dead and marked its
// devices offline. A device whose link names a connection of another
// node was taken over there while this node could not hear of it: its
// connection here ends (TakenOver). It reports how many devices it
// recorded online again.
func (s *Server) RestorePresence(ctx context.Context) (int, error) {
	s.mu.Lock()
	running := s.running
	s.mu.Unlock()
	if !running {
		return 0, nil
	}
	var waits []<-chan error
	for _, l := range s.unsaved.list() {
		waits = append(waits, s.recordOffline(ctx, l))
	}
	var mu sync.Mutex
	restored := 0
	for _, l := range s.links.current() {
		waits = append(waits, s.recordOnlineAgain(ctx, l, func() {
			mu.Lock()
			restored++
			mu.Unlock()
		}))
	}
	var errs []error
	for _, w := range waits {
		if err := <-w; err != nil {
			errs = append(errs, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		return restored, fmt.Errorf("broker: restore presence: %d of %d writes failed: %w", len(errs), len(waits), errs[0])
	}
	return restored, nil
}

// recordOnlineAgain submits the online record of the live connection l,
// unless the store already has it; changed, when given, runs once a
// change is committed. A device whose link names a connection of another
// node was taken over there: its connection here ends (TakenOver).
func (s *Server) recordOnlineAgain(ctx context.Context, l *link, changed func()) <-chan error {
	return s.committer.Submit(ctx, deviceActor(&l.dev), func(tx *store.Tx) error {
		// Checked inside the commit: a connection that ends after this
		// check has its offline record submitted after this job, so
		// committed after it.
		if s.links.byIMEI(l.imei) != l {
			tx.OnCommit(func() { s.unrecorded.saved(l) })
			return nil
		}
		dl, err := tx.DeviceLink(l.imei)
		if err != nil {
			return err
		}
		tx.OnCommit(func() { s.unrecorded.saved(l) })
		if dl.ConnectionID == l.id && dl.Online() {
			return nil
		}
		if node := NodeOf(dl.ConnectionID); dl.ConnectionID != "" && s.Cluster != nil && node != s.Cluster.NodeID() {
			tx.OnCommit(func() { s.TakenOver(l.imei, l.id) })
			return nil
		}
		was := dl.Presence
		dl.Presence, dl.ConnectionID, dl.LastSeen = store.PresenceOnline, l.id, tx.Now()
		if err := tx.PutDeviceLink(dl); err != nil {
			return err
		}
		if changed != nil {
			tx.OnCommit(changed)
		}
		return emitPresence(tx, &l.dev, was, dl.Presence)
	})
}

// repairPresence writes again, every presenceRepairEvery until Close, the
// presence records that could not be committed when their connection
// began or ended, so that the store says what the connections are once it
// can be written again.
func (s *Server) repairPresence() {
	defer s.wg.Done()
	t := time.NewTicker(presenceRepairEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		for _, l := range s.unsaved.list() {
			s.recordOffline(context.Background(), l)
		}
		for _, l := range s.unrecorded.list() {
			s.recordOnlineAgain(context.Background(), l, nil)
		}
	}
}
