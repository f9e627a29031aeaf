package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"strings"

	"github.com/fleetcam/fleetcam/store/pgtest"
	"github.com/fleetcam/fleetcam/store/postgres"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// jobRuns records which of several processes runs a job, and the most
// that ever ran it at once.
type jobRuns struct {
	mu      sync.Mutex
	running map[int]bool
	most    int
	starts  int
	ticks   int // rounds of work done by whichever process ran the job
}

// job works in rounds of 10 ms until its context ends.
func (r *jobRuns) job(node int) func(context.Context) {
	return func(ctx context.Context) {
		r.mu.Lock()
		r.running[node] = true
		r.starts++
		r.most = max(r.most, len(r.running))
		r.mu.Unlock()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				r.mu.Lock()
				delete(r.running, node)
				r.mu.Unlock()
				return
			case <-t.C:
				r.mu.Lock()
				r.ticks++
				r.mu.Unlock()
			}
		}
	}
}

// workDone is how many rounds of work the job did.
func (r *jobRuns) workDone() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ticks
}

// holder is the one process running the job, or -1.
func (r *jobRuns) holder() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.running) != 1 {
		return -1
	}
	for n := range r.running {
		return n
	}
	return -1
}

func (r *jobRuns) snapshot() (most, starts int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.most, r.starts
}

// jobNode is one process taking part: its locks and the end of its Run.
type jobNode struct {
	locks *postgres.JobLocks
	stop  context.CancelFunc
	done  chan struct{}
}

func startJobNodes(t *testing.T, url string, n int, runs *jobRuns) []*jobNode {
	t.Helper()
	nodes := make([]*jobNode, n)
	for i := range nodes {
		l, err := postgres.NewJobLocks(url, 50*time.Millisecond, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		nd := &jobNode{locks: l, stop: stop, done: make(chan struct{})}
		go func() { defer close(nd.done); l.Run(ctx, "retention", runs.job(i)) }()
		nodes[i] = nd
		t.Cleanup(func() { stop(); <-nd.done; l.Close() })
	}
	return nodes
}

// TestJobRunsOnOneProcessAndMovesWhenItStops: three processes want one
// job; exactly one runs it, and when that one stops another takes over.
func TestJobRunsOnOneProcessAndMovesWhenItStops(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t, "")
	runs := &jobRuns{running: map[int]bool{}}
	nodes := startJobNodes(t, url, 3, runs)
	first := -1
	storetest.Eventually(t, "one process to run the job", 2*time.Minute, 10*time.Millisecond, func() bool {
		first = runs.holder()
		return first >= 0
	})
	// Thirty rounds of work, about six of the others' tries: the job stays
	// where it is.
	storetest.Eventually(t, "thirty rounds of work", 2*time.Minute, 10*time.Millisecond, func() bool { return runs.workDone() >= 30 })
	if most, starts := runs.snapshot(); most != 1 || starts != 1 || runs.holder() != first {
		t.Fatalf("the job ran on %d processes at once and started %d times; want once on one", most, starts)
	}
	// The holder stops as a node that shuts down does: its job ends, then
	// its connection closes.
	nodes[first].stop()
	<-nodes[first].done
	nodes[first].locks.Close()
	second := -1
	storetest.Eventually(t, "another process to take the job over", 2*time.Minute, 10*time.Millisecond, func() bool {
		second = runs.holder()
		return second >= 0
	})
	if second == first {
		t.Fatalf("the stopped process %d runs the job again", first)
	}
	if most, starts := runs.snapshot(); most != 1 || starts != 2 {
		t.Fatalf("the job ran on %d processes at once and started %d times; want once on each of two in turn", most, starts)
	}
}

// TestJobStopsWhenItsLockConnectionIsLost: PostgreSQL ends the holder's
// lock connection (as when the server restarts, or the node's network
// fails); the holder's job is cancelled, and the job runs again on one
// process once the lock is taken anew.
func TestJobStopsWhenItsLockConnectionIsLost(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t, "")
	runs := &jobRuns{running: map[int]bool{}}
	startJobNodes(t, url, 2, runs)
	first := -1
	storetest.Eventually(t, "one process to run the job", 2*time.Minute, 10*time.Millisecond, func() bool {
		first = runs.holder()
		return first >= 0
	})
	// The backend that holds the job's advisory lock.
	kill := fmt.Sprintf(`SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = '%s')`, dbName(url))
	if err := pgtest.Shared(t).Exec(context.Background(), "postgres", kill); err != nil {
		t.Fatal(err)
	}
	storetest.Eventually(t, "the job to start again after the lost connection", 2*time.Minute, 10*time.Millisecond, func() bool {
		_, starts := runs.snapshot()
		return starts == 2 && runs.holder() >= 0
	})
}

// TestJobThatEndsByItselfReleasesItsLock: a job that returns while its
// context is live (one its configuration disables) ends Run and leaves
// the lock to others.
func TestJobThatEndsByItselfReleasesItsLock(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t, "")
	l, err := postgres.NewJobLocks(url, 50*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ran := 0
	l.Run(t.Context(), "alarm-mail", func(context.Context) { ran++ })
	if ran != 1 {
		t.Fatalf("the job ran %d times; want once", ran)
	}
	runs := &jobRuns{running: map[int]bool{}}
	startJobNodes(t, url, 1, runs)
	storetest.Eventually(t, "another process to take the released lock", 2*time.Minute, 10*time.Millisecond, func() bool {
		return runs.holder() == 0
	})
}

// TestClusterKeysMustMatch: the first node records its key fingerprints;
// a node with the same keys starts, one with another key is refused by
// the name of the setting.
func TestClusterKeysMustMatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, err := postgres.OpenEngine(ctx, pgtest.Database(t, ""), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	sum := func(b byte) []byte { s := make([]byte, 32); s[0] = b; return s }
	keys := []postgres.KeyFingerprint{{"auth.signingKey", sum(1)}, {"devices.factoryMasterKey", sum(2)}}
	if err := e.CheckClusterKeys(ctx, "node-a", keys); err != nil {
		t.Fatalf("first node: %v", err)
	}
	if err := e.CheckClusterKeys(ctx, "node-b", keys); err != nil {
		t.Fatalf("a node with the same keys: %v", err)
	}
	other := []postgres.KeyFingerprint{{"auth.signingKey", sum(1)}, {"devices.factoryMasterKey", sum(3)}}
	err = e.CheckClusterKeys(ctx, "node-c", other)
	if !errors.Is(err, postgres.ErrKeyDiffers) {
		t.Fatalf("a node with another factory master key: %v", err)
	}
	for _, want := range []string{"devices.factoryMasterKey", "node-a"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not name %s", err, want)
		}
	}
}

// dbName is the database a pgtest URL names.
func dbName(url string) string {
	name := url[strings.LastIndex(url, "/")+1:]
	if i := strings.IndexByte(name, '?'); i >= 0 {
		name = name[:i]
	}
	return name
}
