package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrCommitterClosed means a write was handed to a Committer after Close.
var ErrCommitterClosed = errors.New("store: committer closed")

// Committer is the single writer for high-rate writes (device messages,
// presence, token issuance). Writers hand it jobs; it drains them in batches
// into one bbolt transaction, so one fsync covers every job of the batch, and
// then releases each waiting writer with its own result.
//
// A job that fails does not fail the others of its batch: the batch is rolled
// back and rerun without the failed jobs. A job may therefore run more than
// once and must write only through the Tx it is given. A job whose context
// is done before its batch commits counts as failed with the context's error.
type Committer struct {
	db      *DB
	jobs    chan *commitJob
	max     int
	delay   time.Duration
	onBatch func(BatchStats)

	mu     sync.RWMutex
	closed bool
	done   chan struct{}
}

// CommitterOptions tune a Committer.
type CommitterOptions struct {
	// MaxBatch bounds the jobs in one transaction (at least 1).
	MaxBatch int
	// Delay is how long a batch waits for more jobs after its first one
	// arrived; 0 commits whatever is queued at once.
	Delay time.Duration
	// OnBatch, when set, is told about every committed or failed transaction.
	OnBatch func(BatchStats)
}

// BatchStats describes one transaction of a Committer.
type BatchStats struct {
	Jobs     int           // jobs in the batch
	Failed   int           // jobs that returned an error and were left out
	Attempts int           // transactions run to commit the batch
	Splits   int           // times a transaction that kept losing conflicts was split in two
	Took     time.Duration // from the first attempt to the commit
	Err      error         // the commit error, when the whole batch failed
}

type commitJob struct {
	ctx   context.Context
	actor Actor
	gps   *LatestGPS // the actor device's latest GPS sample, when its connection knows it
	fn    func(*Tx) error
	done  chan error
}

// NewCommitter starts a Committer writing to db. Close stops it.
func (db *DB) NewCommitter(o CommitterOptions) *Committer {
	if o.MaxBatch < 1 {
		o.MaxBatch = 1
	}
	c := &Committer{
		db: db, jobs: make(chan *commitJob, 2*o.MaxBatch), max: o.MaxBatch, delay: o.Delay,
		onBatch: o.OnBatch, done: make(chan struct{}),
	}
	go c.loop()
	return c
}

// Submit queues fn to run on behalf of actor and returns a channel that
// receives its result once the batch holding it is committed (nil) or
// abandoned (the job's or the commit's error). fn is left out of its batch,
// and the channel receives ctx's error, when ctx is done before the batch
// commits.
func (c *Committer) Submit(ctx context.Context, actor Actor, fn func(*Tx) error) <-chan error {
	return c.submit(&commitJob{ctx: ctx, actor: actor, fn: fn})
}

// submit queues j and returns the channel that receives its result.
func (c *Committer) submit(j *commitJob) <-chan error {
	j.done = make(chan error, 1)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		j.done <- ErrCommitterClosed
		return j.done
	}
	c.jobs <- j
	return j.done
}

// Do runs fn on behalf of actor and waits until it is on disk. It waits
// for the batch even when ctx ends first, so that its answer is true: the
// write was committed (nil) or it was not (an error).
func (c *Committer) Do(ctx context.Context, actor Actor, fn func(*Tx) error) error {
	return <-c.Submit(ctx, actor, fn)
}

// DoKnowing is Do for a job of the device actor names, given by the
// connection that holds the device: gps, when not nil, is the device's
// latest stored GPS sample as the connection knows it, and the group
// commit's engine may take it for that sample rather than read it
// (ReadAhead.LatestGPS). fn learns the sample to give the next job of the
// connection from Tx.KnownLatestGPS.
func (c *Committer) DoKnowing(ctx context.Context, actor Actor, gps *LatestGPS, fn func(*Tx) error) error {
	return <-c.submit(&commitJob{ctx: ctx, actor: actor, gps: gps, fn: fn})
}

// Close commits the jobs already queued, then stops. Later jobs get ErrCommitterClosed.
func (c *Committer) Close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.jobs)
	}
	c.mu.Unlock()
	<-c.done
}

func (c *Committer) loop() {
	defer close(c.done)
	for first := range c.jobs {
		c.commit(c.collect(first))
	}
}

// collect gathers up to max jobs, waiting at most delay after first.
func (c *Committer) collect(first *commitJob) []*commitJob {
	batch := []*commitJob{first}
	var deadline <-chan time.Time
	for len(batch) < c.max {
		select {
		case j, ok := <-c.jobs:
			if !ok {
				return batch
			}
			batch = append(batch, j)
			continue
		default:
		}
		if c.delay <= 0 {
			return batch
		}
		if deadline == nil {
			t := time.NewTimer(c.delay)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case j, ok := <-c.jobs:
			if !ok {
				return batch
			}
			batch = append(batch, j)
		case <-deadline:
			return batch
		}
	}
	return batch
}

// Aborter is what an engine's records tell of their transaction when the
// engine aborts a whole transaction at its first failed statement
// (PostgreSQL): Aborted reports whether that happened. A group commit then
// stops the attempt at the job that failed, rather than charge the jobs
// after it with errors that are not theirs.
type Aborter interface {
	Aborted() bool
}

// Pipeliner is what an engine's records offer when they hold writes back
// and send them together with a later statement (PostgreSQL: one round
// trip for many writes). A write that fails then fails after the job that
// made it has returned; the records name that job in a *JobFailed, so
// that the group commit charges it and no other.
type Pipeliner interface {
	// StartJob says that the writes from now on are those of job n.
	StartJob(n int)
}

// BatchUpdater is what an engine offers when a group commit's
// transactions need less isolation than Update gives and cost less with
// it. A device's messages reach the store through one node at a time, and
// what two devices' messages share (the webhook sequence, the hourly
// counts, a unique key) is ordered by locks and unique keys, so a group
// commit needs one snapshot per transaction and a conflict on every row
// two transactions both write, but not PostgreSQL's serialisable
// checks, whose page-level predicate locks make the group commits of the
// nodes of a cluster abort each other for rows they do not share.
type BatchUpdater interface {
	UpdateBatch(ctx context.Context, fn func(Records) error) error
}

// updateBatch runs a group commit's transaction: UpdateBatch when the
// engine has it, Update otherwise.
func (db *DB) updateBatch(ctx context.Context, fn func(Records) error) error {
	if bu, ok := db.engine.(BatchUpdater); ok {
		return bu.UpdateBatch(ctx, fn)
	}
	return db.engine.Update(ctx, fn)
}

// Prefetcher is what an engine's records offer when reading many rows at
// once costs less than reading them one by one (PostgreSQL: one round trip
// instead of one each): a group commit tells them what its jobs will read
// before it runs them, and the rules then find those devices' rows (the
// device, its settings, link, track and organization, its latest GPS
// sample) already read.
type Prefetcher interface {
	Prefetch(ReadAhead) error
}

// ReadAhead is what a group commit's jobs will read, as far as it is known
// before they run.
type ReadAhead struct {
	// IMEIs are the devices the jobs act for, one per job: a device with
	// two jobs in the batch is named twice.
	IMEIs []string
	// Organizations are the organizations of those devices, as the jobs'
	// actors name them, once each. An engine may read their rows by these
	// ids rather than through the devices: a device is moved to another
	// organization only with its connection ended, and should one be
	// named for an organization it has left, the rules read its own when
	// they ask for it.
	Organizations []int64
	// Now is the batch's time.
	Now time.Time
	// LatestGPS are the latest stored GPS samples of some of those
	// devices, as the connections holding them know them
	// (Committer.DoKnowing). The connection a device's messages arrive on
	// is the one writer of its samples, and the retention purge deletes
	// none younger than a day, so an engine may take a recent one for the
	// device's latest sample rather than read it. It is given on a
	// batch's first transaction only.
	LatestGPS map[string]LatestGPS
}

// LatestGPS is a device's latest stored GPS sample and the ownership it
// was recorded for.
type LatestGPS struct {
	Point     GPSPoint
	Ownership int64
}

// same reports whether k and o are the same sample: a device has one a
// millisecond.
func (k LatestGPS) same(o LatestGPS) bool {
	return k.Point.Time.UnixMilli() == o.Point.Time.UnixMilli() && k.Ownership == o.Ownership
}

// GPSKnower is what an engine's records offer when they keep the latest
// GPS samples of the devices whose samples they read or wrote.
type GPSKnower interface {
	// KnownLatestGPS is the latest stored sample of imei the records
	// know, with what they wrote; ok is false when they know none.
	KnownLatestGPS(imei string) (LatestGPS, bool)
}

// KnownLatestGPS is imei's latest stored GPS sample as the transaction
// knows it, its own samples included, without reading: what the device's
// connection gives its next job (Committer.DoKnowing). ok is false when
// the engine keeps none, or knows none for imei.
func (tx *Tx) KnownLatestGPS(imei string) (LatestGPS, bool) {
	if k, ok := tx.rec.(GPSKnower); ok {
		return k.KnownLatestGPS(imei)
	}
	return LatestGPS{}, false
}

// add names device imei of organization org (0: not known); seen holds
// the organizations named so far.
func (a *ReadAhead) add(imei string, org int64, seen map[int64]bool) {
	a.IMEIs = append(a.IMEIs, imei)
	if org != 0 && !seen[org] {
		seen[org] = true
		a.Organizations = append(a.Organizations, org)
	}
}

// readAheadDevices is how many devices a sweep over every device reads
// ahead at a time (Prefetcher).
const readAheadDevices = 500

// readAhead has the engine read the rows of devs ahead, when it can.
func (tx *Tx) readAhead(devs []Device) error {
	pf, ok := tx.rec.(Prefetcher)
	if !ok {
		return nil
	}
	a := ReadAhead{Now: tx.now}
	seen := map[int64]bool{}
	for _, d := range devs {
		a.add(d.IMEI, d.OrganizationID, seen)
	}
	return pf.Prefetch(a)
}

// JobFailed is the error of a statement that a job of a group commit
// wrote and the engine sent later, with another job's statement or with
// the commit (which then fails). Job is the job's number as given to
// Pipeliner.StartJob.
type JobFailed struct {
	Job int
	Err error
}

func (e *JobFailed) Error() string { return e.Err.Error() }
func (e *JobFailed) Unwrap() error { return e.Err }

// blame returns the job of pending (by its position n) that err is the
// fault of, and that job's own error: the job a *JobFailed names, or the
// job n that returned err.
func blame(n int, err error) (int, error) {
	var jf *JobFailed
	if errors.As(err, &jf) {
		return jf.Job, jf.Err
	}
	return n, err
}

// failedJob is the job of n that err, a commit's error, is the fault of,
// or -1 when it is not one job's (a conflict, a lost connection).
func failedJob(err error, n int) int {
	var jf *JobFailed
	if !errors.As(err, &jf) || errors.Is(err, ErrTxConflict) || errors.Is(err, ErrUnavailable) || jf.Job < 0 || jf.Job >= n {
		return -1
	}
	return jf.Job
}

// errRerun aborts a transaction in which some jobs failed.
var errRerun = errors.New("store: rerun batch without failed jobs")

func (c *Committer) commit(batch []*commitJob) {
	start := time.Now()
	stats := BatchStats{Jobs: len(batch)}
	results := make([]error, len(batch))
	pending := make([]int, len(batch)) // indexes into batch
	for i := range pending {
		pending[i] = i
	}
	c.commitJobs(batch, pending, results, &stats)
	stats.Took = time.Since(start)
	// Told before any writer is released, so a writer that returned from
	// Do finds its batch in the statistics.
	if c.onBatch != nil {
		c.onBatch(stats)
	}
	for i, j := range batch {
		j.done <- results[i]
	}
}

// commitJobs commits the jobs of batch at pending in one transaction,
// rerun without the jobs that failed, and records each job's result. A
// transaction that keeps losing to other writers (the engine gave up
// rerunning it: the group commits of the nodes of a cluster meeting on
// the same pages) is split in halves committed one after the other, in
// order: smaller transactions meet fewer others, and only a single job
// that still loses fails.
func (c *Committer) commitJobs(batch []*commitJob, pending []int, results []error, stats *BatchStats) {
	for len(pending) > 0 {
		stats.Attempts++
		failed := make(map[int]error)
		tried := false // whether the engine ran the transaction before
		err := c.db.updateBatch(context.Background(), func(rec Records) error {
			now := c.db.Now()
			pipe, _ := rec.(Pipeliner)
			if pf, ok := rec.(Prefetcher); ok {
				// What the connections know is taken on a batch's first
				// transaction only: one run again for any reason reads
				// it, should a conflict have come from it.
				if err := pf.Prefetch(c.readAhead(batch, pending, now, stats.Attempts == 1 && !tried)); err != nil {
					return err
				}
			}
			tried = true
			for n, i := range pending {
				j := batch[i]
				if pipe != nil {
					pipe.StartJob(n)
				}
				if err := abandoned(j.ctx); err != nil {
					failed[n] = err
				} else if err := runJob(c.db.newTx(rec, j.ctx, j.actor, now), j.fn); err != nil {
					if errors.Is(err, ErrTxConflict) {
						// The batch as a whole lost: the engine runs it
						// again, every job in it.
						return err
					}
					at, jerr := blame(n, err)
					failed[at] = jerr
					if a, ok := rec.(Aborter); ok && a.Aborted() {
						// Nothing more can succeed in this transaction:
						// the jobs after this one run in the next.
						break
					}
				}
			}
			// A writer that gave up while the batch ran must not find its
			// write committed after all.
			for n, i := range pending {
				if err := abandoned(batch[i].ctx); err != nil {
					if _, ok := failed[n]; !ok {
						failed[n] = err
					}
				}
			}
			if len(failed) > 0 {
				return errRerun
			}
			return nil
		})
		switch {
		case err == nil:
			pending = nil
		case errors.Is(err, errRerun):
			rest := pending[:0:0]
			for n, i := range pending {
				if ferr, ok := failed[n]; ok {
					results[i] = ferr
					stats.Failed++
				} else {
					rest = append(rest, i)
				}
			}
			pending = rest
		case failedJob(err, len(pending)) >= 0:
			// A write held back failed at the commit: its job fails,
			// the others run again.
			n, jerr := blame(-1, err)
			results[pending[n]] = jerr
			stats.Failed++
			pending = append(pending[:n:n], pending[n+1:]...)
		case errors.Is(err, ErrTxConflict) && len(pending) > 1:
			stats.Splits++
			half := len(pending) / 2
			c.commitJobs(batch, pending[:half], results, stats)
			c.commitJobs(batch, pending[half:], results, stats)
			pending = nil
		default:
			for _, i := range pending {
				results[i] = err
			}
			stats.Err = err
			pending = nil
		}
	}
}

// readAhead is what the jobs of batch at pending will read: the devices
// they act for and those devices' organizations, and, with known, the
// latest GPS samples their connections know. A device whose jobs know two
// different ones (two connections of it, the earlier one ending) is given
// none.
func (c *Committer) readAhead(batch []*commitJob, pending []int, now time.Time, known bool) ReadAhead {
	a := ReadAhead{Now: now}
	seen := map[int64]bool{}
	var differ map[string]bool
	for _, i := range pending {
		j := batch[i]
		if j.actor.IMEI == "" {
			continue
		}
		a.add(j.actor.IMEI, j.actor.OrganizationID, seen)
		if !known || j.gps == nil {
			continue
		}
		if a.LatestGPS == nil {
			a.LatestGPS = map[string]LatestGPS{}
		}
		if k, ok := a.LatestGPS[j.actor.IMEI]; ok && !k.same(*j.gps) {
			if differ == nil {
				differ = map[string]bool{}
			}
			differ[j.actor.IMEI] = true
		}
		a.LatestGPS[j.actor.IMEI] = *j.gps
	}
	for imei := range differ {
		delete(a.LatestGPS, imei)
	}
	return a
}

// runJob runs one job, turning a panic into its error so that one bad job
// cannot take the writer down.
func runJob(tx *Tx, fn func(*Tx) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("store: write job panicked: %v", r)
		}
	}()
	return fn(tx)
}
