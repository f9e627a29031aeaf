package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fleetcam/fleetcam/store"
)

// pipe is one transaction on one pooled connection that spends as few
// round trips as its statements allow. Three things travel with the next
// statement that needs an answer rather than on their own:
//
//   - the BEGIN, sent with the transaction's first statement;
//   - the writes queued with queue, whose answer no rule waits for (an
//     insert that returns nothing, an upsert): they go in order, in one
//     pipeline, ahead of the next read, so a read still sees every write
//     of its transaction before it;
//   - the writes queued with queueLast (the webhook messages, whose
//     sequence lock is then held only while the transaction commits), sent
//     with the COMMIT or before a read of their own table (flushLast).
//
// The COMMIT goes with whatever is still queued. A queued write that fails
// is reported to the statement that carried it, and to every later one, as
// a *store.JobFailed naming the job that queued it (StartJob), so that a
// group commit charges the job that wrote it and no other. The writes a
// bulk transaction holds beyond the queue (heldWrites) go before any
// statement of its own.
//
// pipe implements pgx.Tx, so that the records use it as they would
// pgx's own transaction.
type pipe struct {
	conn    *pgxpool.Conn
	begin   string // the BEGIN still to send; "" once sent
	queued  []queuedStmt
	last    []queuedStmt
	job     int
	jobs    bool  // a group commit runs jobs in it (StartJob)
	failure error // sticky: the first queued write that failed
	closed  bool
	// readOnly is true for a read-only transaction, which draws no ids.
	readOnly bool
	// paged is true once planPages set the pages' planner settings.
	paged  bool
	nested int // savepoints taken
	// held are the writes a bulk transaction holds beyond the queue
	// (bulk.go); quiet while it sends what is its own.
	held  heldWrites
	quiet bool
	// ahead is true once a view read all it may read and ended
	// (viewGather); missed is true when it then asked for more.
	ahead, missed bool
	trips         int // round trips sent (send), which the tests count
	// along are reads of rows that go with the next statement
	// (tx.ReadAlong).
	along []alongRead
}

// alongRead is the read of one row that travels with the transaction's
// next statement, after its queued writes: keep takes the row as read.
type alongRead struct {
	sql  string
	args []any
	keep func(memoRow)
}

// heldWrites are writes a transaction holds back beyond the pipe's queue,
// and rows it read ahead (a bulk transaction's, bulk.go). Before any
// other statement of the transaction goes out, or is queued, the held
// writes are sent, so that it comes after them as it was made after them,
// and what was read ahead is forgotten, since the statement may change it.
// The held writes may go on the connection while the transaction goes on
// without it: whatever uses the connection settles them first.
type heldWrites interface {
	// pending reports whether writes are held.
	pending() bool
	// write sends the held writes, or starts to.
	write() error
	// settle waits until the writes write started are done, and returns
	// their error.
	settle() error
	// forget drops what was read ahead.
	forget()
	// discard drops the held writes: the savepoint taken before them was
	// rolled back.
	discard()
}

// queuedStmt is a write waiting for the next round trip.
type queuedStmt struct {
	sql  string
	args []any
	job  int
	// unseen is true for an insert of keys the transaction saw absent:
	// a duplicate key is then another transaction's, out of sight.
	unseen bool
	// merge, when set, are the rows of the write, which go in one
	// statement with those of the writes of its kind queued next to it
	// (pipemerge.go).
	merge mergeable
}

// beginSQL is the statement that opens a transaction of o.
func beginSQL(o pgx.TxOptions) string {
	s := "BEGIN"
	switch o.IsoLevel {
	case pgx.Serializable:
		s += " ISOLATION LEVEL SERIALIZABLE"
	case pgx.RepeatableRead:
		s += " ISOLATION LEVEL REPEATABLE READ"
	case pgx.ReadCommitted:
		s += " ISOLATION LEVEL READ COMMITTED"
	}
	if o.AccessMode == pgx.ReadOnly {
		s += " READ ONLY"
	}
	return s
}

// openPipe takes a connection of pool for a transaction of o; nothing is
// sent until its first statement.
func openPipe(ctx context.Context, pool *pgxpool.Pool, o pgx.TxOptions) (*pipe, error) {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &pipe{conn: c, begin: beginSQL(o), readOnly: o.AccessMode == pgx.ReadOnly}, nil
}

// StartJob says that the writes queued from now on are job n's.
func (p *pipe) StartJob(n int) { p.job, p.jobs = n, true }

// Aborted reports whether a statement of the transaction failed: the
// server refuses every later one.
func (p *pipe) Aborted() bool {
	p.settle()
	return p.failure != nil || p.conn.Conn().PgConn().TxStatus() == 'E'
}

// queue holds back a write whose answer nobody waits for.
func (p *pipe) queue(sql string, args ...any) error {
	if err := p.beforeOwn(); err != nil {
		return err
	}
	p.queued = append(p.queued, queuedStmt{sql: sql, args: args, job: p.job})
	return nil
}

// planPages has the rest of a read-only transaction run its statements
// as the event pages want them, with the settings travelling ahead of the
// next read. A read-write transaction keeps the server's choices.
//
// Generic plans (plan_cache_mode), from a statement's first execution on
// a connection: a page's statements and their counts read the partitions
// of the events, and planned for its values such a statement is planned
// again at every execution (the planner estimates a plan over every
// partition dearer than one over the few its values name), which costs
// about as much as reading the page; the generic plan leaves out the
// partitions outside its bounds when it starts to run (initial pruning).
//
// No parallel workers (max_parallel_workers_per_gather): a page reads a
// hundred events, and a plan that starts worker processes to sort the
// window's index entries starts them at every page.
func (t *tx) planPages() error {
	p := pipeOf(t)
	if p == nil || !p.readOnly || p.paged {
		return nil
	}
	p.paged = true
	return p.queue(pagePlanSettings)
}

// pagePlanSettings are the planner settings of a read of pages
// (planPages), for the rest of its transaction.
const pagePlanSettings = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true),
		set_config('max_parallel_workers_per_gather', '0', true)`

// queueUnseen holds back an insert of keys the transaction read as
// absent. Should another transaction, out of this one's sight, have stored
// one of them meanwhile, the duplicate key is reported as the
// serialisation failure it is (a conflict, run again) rather than a
// refusal of the write.
func (p *pipe) queueUnseen(sql string, args ...any) error {
	if err := p.queue(sql, args...); err != nil {
		return err
	}
	p.queued[len(p.queued)-1].unseen = true
	return nil
}

// queueGPS queues the insert of g, none of whose samples the transaction
// saw stored (queueUnseen), which goes in one statement with the GPS
// inserts queued next to it (pipemerge.go).
func (p *pipe) queueGPS(g *gpsRows) error {
	if err := p.queueUnseen(insertGPSQueued, g.args()...); err != nil {
		return err
	}
	p.queued[len(p.queued)-1].merge = g
	return nil
}

// queueMerged queues the write sql of args, whose rows m are, and which
// goes in one statement with the writes of m's kind queued next to it
// (pipemerge.go).
func (p *pipe) queueMerged(m mergeable, sql string, args ...any) error {
	if err := p.queue(sql, args...); err != nil {
		return err
	}
	p.queued[len(p.queued)-1].merge = m
	return nil
}

// queueLast holds back a write until the commit.
func (p *pipe) queueLast(sql string, args ...any) error {
	if err := p.beforeOwn(); err != nil {
		return err
	}
	p.last = append(p.last, queuedStmt{sql: sql, args: args, job: p.job})
	return nil
}

// queueLastMerged is queueLast for a write whose rows are m, which goes
// in one statement with the writes of m's kind held next to it
// (pipemerge.go).
func (p *pipe) queueLastMerged(m mergeable, sql string, args ...any) error {
	if err := p.queueLast(sql, args...); err != nil {
		return err
	}
	p.last[len(p.last)-1].merge = m
	return nil
}

// flushLast moves the writes held for the commit to the next round trip,
// for a read of what they write.
func (p *pipe) flushLast() {
	p.queued = append(p.queued, p.last...)
	p.last = nil
}

// beforeOwn readies the pipe for a statement of the transaction's own:
// the held writes go first, and what was read ahead with them is
// forgotten. It returns the pipe's failure.
func (p *pipe) beforeOwn() error {
	if err := p.settle(); err != nil {
		return err
	}
	if p.held == nil || p.quiet {
		return nil
	}
	p.held.forget()
	if err := p.writeHeld(); err != nil {
		return err
	}
	return p.settle()
}

// settle waits for the held writes on their way on the connection, whose
// failure becomes the pipe's, and returns the pipe's failure: whatever
// uses the connection settles first.
func (p *pipe) settle() error {
	if p.held != nil {
		if err := p.held.settle(); err != nil && p.failure == nil {
			p.failure = err
		}
	}
	return p.failure
}

// writeHeld sends the held writes, if any; their failure is the pipe's.
func (p *pipe) writeHeld() error {
	if p.held == nil || !p.held.pending() {
		return nil
	}
	p.quiet = true
	err := p.held.write()
	p.quiet = false
	if err != nil && p.failure == nil {
		p.failure = err
	}
	return err
}

// send starts a round trip: the BEGIN when it is due, the queued writes,
// then the statements of b. It reads the results of what it put before
// b's and returns the batch positioned at b's first statement.
func (p *pipe) send(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	if err := p.beforeOwn(); err != nil {
		return nil, err
	}
	if p.closed {
		if p.ahead {
			p.missed = true
			return nil, errNotReadAhead
		}
		return nil, pgx.ErrTxClosed
	}
	all := &pgx.Batch{}
	begin := p.begin != ""
	if begin {
		all.Queue(p.begin)
	}
	queued := mergeQueued(all, p.queued)
	along := p.along
	for _, a := range along {
		all.Queue(a.sql, a.args...)
	}
	if b != nil {
		all.QueuedQueries = append(all.QueuedQueries, b.QueuedQueries...)
	}
	p.begin, p.queued, p.along = "", nil, nil
	p.trips++
	br := p.conn.SendBatch(ctx, all)
	if begin {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, err
		}
	}
	for _, q := range queued {
		if _, err := br.Exec(); err != nil {
			br.Close()
			var pe *pgconn.PgError
			switch {
			case q.unseen && errors.As(err, &pe) && pe.Code == "23505":
				err = &pgconn.PgError{Severity: "ERROR", Code: "40001", Message: "could not serialize access: " + pe.Message, Detail: pe.Detail}
			case q.merged > 1:
				err = &pgconn.PgError{Severity: "ERROR", Code: "40001",
					Message: fmt.Sprintf("could not serialize access: an insert of %d jobs' rows failed: %v", q.merged, err)}
			}
			p.failure = &store.JobFailed{Job: q.job, Err: classify(err)}
			return nil, p.failure
		}
	}
	for _, a := range along {
		rows, err := br.Query()
		if err == nil {
			var r memoRow
			if r, err = readMemoRow(rows); err == nil {
				a.keep(r)
				continue
			}
		}
		br.Close()
		return nil, err
	}
	return br, nil
}

// Exec implements pgx.Tx.
func (p *pipe) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := p.send(ctx, b)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// Query implements pgx.Tx.
func (p *pipe) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := p.send(ctx, b)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return &pipeRows{Rows: rows, br: br}, nil
}

// QueryRow implements pgx.Tx.
func (p *pipe) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := p.Query(ctx, sql, args...)
	if err != nil {
		return errRow{err}
	}
	return pipeRow{rows.(*pipeRows)}
}

// SendBatch implements pgx.Tx: b's statements go in the same round trip
// as what is queued.
func (p *pipe) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	br, err := p.send(ctx, b)
	if err != nil {
		return errBatch{err}
	}
	return br
}

// flush sends what is queued (and the BEGIN) on its own.
func (p *pipe) flush(ctx context.Context) error {
	if p.begin == "" && len(p.queued) == 0 {
		return p.settle()
	}
	br, err := p.send(ctx, nil)
	if err != nil {
		return err
	}
	return br.Close()
}

// CopyFrom implements pgx.Tx.
func (p *pipe) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := p.flush(ctx); err != nil {
		return 0, err
	}
	return p.conn.CopyFrom(ctx, table, columns, src)
}

// Prepare implements pgx.Tx.
func (p *pipe) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := p.flush(ctx); err != nil {
		return nil, err
	}
	return p.conn.Conn().Prepare(ctx, name, sql)
}

// LargeObjects implements pgx.Tx; fleetcam keeps none.
func (p *pipe) LargeObjects() pgx.LargeObjects {
	panic("store/postgres: large objects are not used")
}

// Conn implements pgx.Tx.
func (p *pipe) Conn() *pgx.Conn {
	p.settle()
	return p.conn.Conn()
}

// Begin implements pgx.Tx: a savepoint.
func (p *pipe) Begin(ctx context.Context) (pgx.Tx, error) {
	p.nested++
	sp := &savepoint{pipe: p, name: fmt.Sprintf("sp_%d", p.nested)}
	if _, err := p.Exec(ctx, "SAVEPOINT "+sp.name); err != nil {
		return nil, err
	}
	return sp, nil
}

// Commit implements pgx.Tx: what is queued, then COMMIT, in one round trip.
// A transaction that never sent a statement has nothing to commit.
func (p *pipe) Commit(ctx context.Context) error {
	if p.closed {
		return pgx.ErrTxClosed
	}
	if err := p.writeHeld(); err != nil {
		return err
	}
	p.flushLast()
	if p.begin != "" && len(p.queued) == 0 {
		p.end()
		return nil
	}
	b := &pgx.Batch{}
	b.Queue("COMMIT")
	br, err := p.send(ctx, b)
	if err != nil {
		return err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && tag.String() == "ROLLBACK" {
		err = pgx.ErrTxCommitRollback
	}
	if err == nil {
		p.end()
	}
	return err
}

// Rollback implements pgx.Tx: it ends the transaction and gives the
// connection back. It may follow a Commit that failed.
func (p *pipe) Rollback(ctx context.Context) error {
	if p.closed {
		return nil
	}
	p.settle()
	var err error
	if p.begin == "" {
		_, err = p.conn.Exec(ctx, "ROLLBACK")
	}
	p.end()
	return err
}

// endRead ends a read-only transaction without waiting for the server.
// Nothing it did is kept either way, so the caller goes on at once: its
// ROLLBACK goes out, and the connection goes back to the pool with the
// answer, as Rollback would give it back. On a busy server each round
// trip a request waits for costs a wake-up of its backend and of the
// goroutine waiting for it, so a read's answer should not wait for its
// end as well. A transaction that sent nothing ends at once.
//
// ends counts the ROLLBACKs on their way (Engine.readEnds).
func (p *pipe) endRead(ends *atomic.Int64) {
	if p.closed {
		return
	}
	p.settle()
	if p.begin != "" {
		p.end()
		return
	}
	p.closed = true
	p.queued, p.last, p.along = nil, nil, nil
	conn := p.conn
	ends.Add(1)
	go func() {
		defer ends.Add(-1)
		// A rollback that cannot be sent, or is not answered within
		// readEndWait, leaves the connection in its transaction (or
		// closed), and the pool closes it when it comes back.
		ctx, cancel := context.WithTimeout(context.Background(), readEndWait)
		_, _ = conn.Exec(ctx, "ROLLBACK")
		cancel()
		conn.Release()
	}()
}

// readEndWait bounds the wait for a read's ROLLBACK, which nobody waits
// for (endRead): a server that stopped answering cannot keep a connection
// out of the pool for longer.
const readEndWait = 30 * time.Second

// errNotReadAhead answers a read of a view that ended after reading ahead.
var errNotReadAhead = errors.New("store: postgres: read outside what the view read ahead")

// end gives the connection back to the pool, which closes it when it is
// still in a transaction (a rollback that could not be sent).
func (p *pipe) end() {
	p.closed = true
	p.queued, p.last, p.along = nil, nil, nil
	p.conn.Release()
}

// savepoint is a transaction nested in a pipe.
type savepoint struct {
	*pipe
	name string
	done bool // released or rolled back
}

// Commit implements pgx.Tx: the savepoint is released.
func (s *savepoint) Commit(ctx context.Context) error {
	if s.done {
		return pgx.ErrTxClosed
	}
	s.done = true
	_, err := s.pipe.Exec(ctx, "RELEASE SAVEPOINT "+s.name)
	return err
}

// Rollback implements pgx.Tx: back to the savepoint, which clears a
// failure; once it is released or rolled back, pgx.ErrTxClosed (which
// pgx.BeginFunc expects of the rollback it defers).
func (s *savepoint) Rollback(ctx context.Context) error {
	if s.done {
		return pgx.ErrTxClosed
	}
	s.done = true
	s.pipe.settle()
	s.pipe.failure = nil
	if s.pipe.held != nil && !s.pipe.quiet {
		s.pipe.held.discard()
	}
	_, err := s.pipe.conn.Exec(ctx, "ROLLBACK TO SAVEPOINT "+s.name)
	return err
}

// pipeRows are the rows of a query sent in a batch; closing them closes the batch.
type pipeRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error // of closing the batch
}

// Next implements pgx.Rows: past the last row the batch is closed too, as
// pgx closes rows read to their end.
func (r *pipeRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

// Close implements pgx.Rows.
func (r *pipeRows) Close() {
	r.Rows.Close()
	if err := r.br.Close(); err != nil && r.err == nil {
		r.err = err
	}
}

// Err implements pgx.Rows.
func (r *pipeRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// pipeRow is the first row of a query sent in a batch.
type pipeRow struct{ rows *pipeRows }

// Scan implements pgx.Row as pgx's own: pgx.ErrNoRows without a row.
func (r pipeRow) Scan(dest ...any) error {
	rows := r.rows
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// errRow is a row whose query could not be sent.
type errRow struct{ err error }

// Scan implements pgx.Row.
func (r errRow) Scan(...any) error { return r.err }

// errBatch is a batch that could not be sent.
type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow{b.err} }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }

// pipeOf is t's pipe, nil when t runs on another pgx.Tx (tests that open
// transactions of their own).
func pipeOf(t *tx) *pipe {
	p, _ := t.pg.(*pipe)
	return p
}

// groupPipe is t's pipe when a group commit runs its jobs in it: the
// appends whose identity nobody reads (audit entries, webhook messages)
// are then held back too, and draw their identities when they go. Other
// transactions draw them at once, and their callers find them set.
func groupPipe(t *tx) *pipe {
	if p := pipeOf(t); p != nil && p.jobs {
		return p
	}
	return nil
}

// queue runs a write whose answer nobody waits for: held back for the next
// round trip on a pipe, at once otherwise.
func (t *tx) queue(sql string, args ...any) error {
	if p := pipeOf(t); p != nil {
		return p.queue(sql, args...)
	}
	_, err := t.exec(sql, args...)
	return err
}

// queueGPS queues the insert of g (pipe.queueGPS), or runs it at once
// outside a pipe.
func (t *tx) queueGPS(g *gpsRows) error {
	if p := pipeOf(t); p != nil {
		return p.queueGPS(g)
	}
	_, err := t.exec(insertGPSQueued, g.args()...)
	return err
}

// queueRow is queue for a write of one row by args that merges with the
// writes of kind (whose statement takes args as columns) queued next to
// it, unless they change the row key names too.
func (t *tx) queueRow(kind *mergeKind, key, sql string, args ...any) error {
	return t.queueMerged(&argsRow{of: kind, id: key, args: args}, sql, args...)
}

// queueMerged is queue for a write whose rows are m (pipe.queueMerged).
func (t *tx) queueMerged(m mergeable, sql string, args ...any) error {
	if p := pipeOf(t); p != nil {
		return p.queueMerged(m, sql, args...)
	}
	_, err := t.exec(sql, args...)
	return err
}

var _ pgx.Tx = (*pipe)(nil)
