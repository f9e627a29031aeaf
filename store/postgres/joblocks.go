package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// JobLocks runs jobs that must run on one process at a time among all the
// processes that share a database (the nodes of a cluster): the retention
// purge, the offline alarm watch, alarm e-mail, webhook delivery. A job
// runs while its process holds a session-level advisory lock named after
// it, taken with pg_try_advisory_lock on a connection of its own, outside
// the engine's pool. The lock is PostgreSQL's: it is released when the
// process unlocks it, closes the connection, dies (the kernel closes the
// socket) or, a host gone silent, when the server's TCP keepalive gives
// the session up (jobKeepalive). Processes that do not hold a lock try it
// again every retry.
//
// A holder checks its connection every retry as well; once the check
// fails the lock may be another's, so the job's context is cancelled and
// the process goes back to trying. Between a lost connection and that
// check, two processes can run one job: every job run this way must be
// safe to run twice at once (each is a loop of idempotent steps in its own
// transactions).
type JobLocks struct {
	url   string
	retry time.Duration
	log   *slog.Logger

	mu     sync.Mutex
	conn   *pgx.Conn // nil until connected, and after the connection failed
	gen    int       // counts connections: a lock belongs to the one it was taken on
	closed bool
}

// jobKeepalive asks the server to probe an idle lock connection after 10
// seconds of silence, every 5 seconds, 3 times, so that the locks of a
// host that vanished without closing its sockets go free in about 25
// seconds rather than after the operating system's default two hours.
var jobKeepalive = map[string]string{"tcp_keepalives_idle": "10", "tcp_keepalives_interval": "5", "tcp_keepalives_count": "3"}

// NewJobLocks prepares job locks on the database at url (a libpq URL, as
// for OpenEngine); it connects when a job first asks for its lock.
func NewJobLocks(url string, retry time.Duration, log *slog.Logger) (*JobLocks, error) {
	if _, err := pgx.ParseConfig(url); err != nil {
		return nil, fmt.Errorf("store: postgres URL: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &JobLocks{url: url, retry: retry, log: log.With("component", "joblocks")}, nil
}

// Close releases every lock (it closes the connection); Run calls still
// going cancel their jobs at their next check and end with their contexts.
func (j *JobLocks) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	j.dropLocked()
	return nil
}

// Run runs job while this process holds the lock of name, until ctx ends:
// it takes the lock when it is free (at once, or at a later try), runs job
// with a context that ends when ctx does or the lock is lost, and takes
// the lock again when it can. job should return soon after its context
// ends; the lock is released once it has. A job that returns by itself,
// its context live (a job its configuration disables), is done: Run
// releases the lock and returns.
func (j *JobLocks) Run(ctx context.Context, name string, job func(context.Context)) {
	key := lockKey(name)
	for {
		if gen, ok := j.try(ctx, name, key); ok {
			j.log.Info("job lock taken; running the job on this node", "job", name)
			if j.hold(ctx, name, key, gen, job) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(j.retry):
		}
	}
}

// hold runs job while the lock taken on connection gen stays held, and
// reports whether the job returned by itself.
func (j *JobLocks) hold(ctx context.Context, name string, key int64, gen int, job func(context.Context)) (finished bool) {
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); job(jctx) }()
	t := time.NewTicker(j.retry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			cancel()
			<-done
			j.unlock(name, key, gen)
			return false
		case <-done:
			j.unlock(name, key, gen)
			return ctx.Err() == nil
		case <-t.C:
			if !j.alive(gen) {
				j.log.Warn("job lock connection lost; the job stops here and another node may take it", "job", name)
				cancel()
				<-done
				return false
			}
		}
	}
}

// lockKey is the advisory lock key of a job: FNV-1a of its name under a
// prefix of its own, so that it meets no other advisory lock of fleetcam.
func lockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("fleetcam job lock " + name))
	return int64(h.Sum64())
}

// try takes the lock of key if it is free, connecting first when needed,
// and returns the connection it is held on.
func (j *JobLocks) try(ctx context.Context, name string, key int64) (int, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return 0, false
	}
	if j.conn == nil {
		if err := j.connectLocked(ctx); err != nil {
			j.log.Warn("job locks: cannot reach PostgreSQL; trying again", "job", name, "err", err)
			return 0, false
		}
	}
	qctx, cancel := context.WithTimeout(ctx, j.patience())
	defer cancel()
	var ok bool
	if err := j.conn.QueryRow(qctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil {
		j.log.Warn("job locks: try the lock", "job", name, "err", err)
		j.dropLocked()
		return 0, false
	}
	return j.gen, ok
}

func (j *JobLocks) connectLocked(ctx context.Context) error {
	cfg, err := pgx.ParseConfig(j.url)
	if err != nil {
		return err
	}
	cfg.RuntimeParams["application_name"] = "fleetcam job locks"
	for k, v := range jobKeepalive {
		cfg.RuntimeParams[k] = v
	}
	cctx, cancel := context.WithTimeout(ctx, j.patience())
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return err
	}
	j.conn = conn
	j.gen++
	return nil
}

// patience is how long a statement on the lock connection may take before
// the connection is taken for lost: at least 5 s, however short the retry.
// A loaded server or machine answers late, and dropping the connection
// drops every lock this process holds, its life lock too, for others to
// take. Waiting opens no window for two holders: the server frees the
// locks of a connection only once it is closed, or its peer found gone
// (jobKeepalive, about 25 s).
func (j *JobLocks) patience() time.Duration { return max(j.retry, 5*time.Second) }

// alive reports whether connection gen is still the one open and answers.
func (j *JobLocks) alive(gen int) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.conn == nil || j.gen != gen {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), j.patience())
	defer cancel()
	if err := j.conn.Ping(ctx); err != nil {
		j.dropLocked()
		return false
	}
	return true
}

// unlock releases the lock of key if connection gen still holds it.
func (j *JobLocks) unlock(name string, key int64, gen int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.conn == nil || j.gen != gen {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), j.patience())
	defer cancel()
	if _, err := j.conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key); err != nil {
		j.log.Warn("job locks: release the lock; closing its connection instead", "job", name, "err", err)
		j.dropLocked()
	}
}

// dropLocked closes the connection, which releases every lock it held.
func (j *JobLocks) dropLocked() {
	if j.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = j.conn.Close(ctx)
	j.conn = nil
}

// WhileFree runs fn while this process holds the lock of name, if the
// lock is free now, and reports whether it was: a process holding a lock
// for its life (a cluster node's "node:<id>") is alive while the lock is
// taken, so a free lock means the process is gone, and holding it while
// fn runs keeps a new process of that name from starting meanwhile. The
// lock is released once fn returns.
func (j *JobLocks) WhileFree(ctx context.Context, name string, fn func() error) (bool, error) {
	key := lockKey(name)
	gen, ok := j.try(ctx, name, key)
	if !ok {
		return false, nil
	}
	defer j.unlock(name, key, gen)
	return true, fn()
}
