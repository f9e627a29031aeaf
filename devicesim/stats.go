package devicesim

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// Stats counts what a fleet of devices did. It is safe for concurrent use;
// Snapshot reads it.
type Stats struct {
	started time.Time

	online, connects, firstConnects        atomic.Int64
	connectErrors, refused, disconnects    atomic.Int64
	published, publishErrors, dropped      atomic.Int64
	gpsBatches, eventsSent, replies, ready atomic.Int64
	received, commands, commandErrors      atomic.Int64
	grants, configAcks, events, suppressed atomic.Int64
	gpsSamples, uploads, uploadErrors      atomic.Int64
	uploadBytes, skipped                   atomic.Int64
	expected, onlineAtStop                 atomic.Int64
	stopped                                atomic.Bool
	allConnectedNanos                      atomic.Int64
	ack, connect                           latencies

	mu      sync.Mutex
	lastErr string
}

// NewStats returns empty counters; the clock for rates starts now.
func NewStats() *Stats { return &Stats{started: time.Now()} }

// Expect sets how many devices should connect; Snapshot then reports when
// the last of them first connected.
func (s *Stats) Expect(n int) { s.expected.Store(int64(n)) }

// Stop records how many devices are connected as the run ends; call it
// before the devices are told to stop, which disconnects them.
func (s *Stats) Stop() {
	s.onlineAtStop.Store(s.online.Load())
	s.stopped.Store(true)
}

func (s *Stats) connected(took time.Duration, first bool) {
	s.online.Add(1)
	s.connects.Add(1)
	s.connect.add(took)
	if first && s.firstConnects.Add(1) == s.expected.Load() {
		s.allConnectedNanos.Store(int64(time.Since(s.started)))
	}
}

func (s *Stats) connectFailed(refused bool) {
	s.connectErrors.Add(1)
	if refused {
		s.refused.Add(1)
	}
}

func (s *Stats) disconnected() {
	s.online.Add(-1)
	s.disconnects.Add(1)
}

func (s *Stats) sent(suffix string, latency time.Duration) {
	s.published.Add(1)
	s.ack.add(latency)
	switch suffix {
	case "up/gps":
		s.gpsBatches.Add(1)
	case "up/event":
		s.eventsSent.Add(1)
	case "up/reply":
		s.replies.Add(1)
	case "up/media":
		s.ready.Add(1)
	}
}

func (s *Stats) publishFailed() { s.publishErrors.Add(1) }

func (s *Stats) setLastError(imei string, err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	s.lastErr = imei + ": " + err.Error()
	s.mu.Unlock()
}

// Snapshot is a copy of the counters at one moment.
type Snapshot struct {
	Elapsed time.Duration
	// Online is the number of devices connected now.
	Online int64
	// OnlineAtStop is the number of devices connected when Stop was
	// called; before that, the number connected now.
	OnlineAtStop int64
	// Connects counts successful connections; FirstConnects devices that connected at least once.
	Connects, FirstConnects int64
	// AllConnected is how long after the start the last expected device first connected (0: not yet).
	AllConnected time.Duration
	// ConnectErrors counts failed connection attempts; Refused those the broker refused (CONNACK).
	ConnectErrors, Refused, Disconnects int64
	// Published counts acknowledged publishes, by kind below; PublishErrors failed ones.
	Published, PublishErrors                   int64
	GPSBatches, EventsSent, Replies, MediaSent int64
	// Dropped counts queued messages dropped beyond the outbox limit.
	Dropped int64
	// Skipped counts load-mode messages not sent because the device was
	// offline or already had its window of publishes awaiting PUBACK.
	Skipped int64
	// Received counts messages from the broker; Commands those that were commands.
	Received, Commands, CommandErrors int64
	Grants, ConfigAcks                int64
	// Events counts events created; Suppressed those the configuration stopped.
	Events, Suppressed, GPSSamples int64
	Uploads, UploadErrors          int64
	UploadBytes                    int64
	// Ack is the PUBLISH→PUBACK latency; Connect the dial→SUBACK time.
	Ack, Connect Percentiles
	LastError    string
}

// Percentiles summarise a latency distribution (about 3% resolution).
type Percentiles struct {
	Count                    int64
	P50, P90, P99, P999, Max time.Duration
}

// Errors is the total of every error counter.
func (s Snapshot) Errors() int64 {
	return s.ConnectErrors + s.PublishErrors + s.CommandErrors + s.UploadErrors
}

// Snapshot copies the counters.
func (s *Stats) Snapshot() Snapshot {
	s.mu.Lock()
	last := s.lastErr
	s.mu.Unlock()
	snap := Snapshot{
		Elapsed: time.Since(s.started), Online: s.online.Load(), OnlineAtStop: s.online.Load(),
		Connects: s.connects.Load(), FirstConnects: s.firstConnects.Load(),
		AllConnected:  time.Duration(s.allConnectedNanos.Load()),
		ConnectErrors: s.connectErrors.Load(), Refused: s.refused.Load(), Disconnects: s.disconnects.Load(),
		Published: s.published.Load(), PublishErrors: s.publishErrors.Load(),
		GPSBatches: s.gpsBatches.Load(), EventsSent: s.eventsSent.Load(), Replies: s.replies.Load(), MediaSent: s.ready.Load(),
		Dropped: s.dropped.Load(), Skipped: s.skipped.Load(), Received: s.received.Load(), Commands: s.commands.Load(), CommandErrors: s.commandErrors.Load(),
		Grants: s.grants.Load(), ConfigAcks: s.configAcks.Load(), Events: s.events.Load(), Suppressed: s.suppressed.Load(),
		GPSSamples: s.gpsSamples.Load(), Uploads: s.uploads.Load(), UploadErrors: s.uploadErrors.Load(),
		UploadBytes: s.uploadBytes.Load(), Ack: s.ack.percentiles(), Connect: s.connect.percentiles(), LastError: last,
	}
	if s.stopped.Load() {
		snap.OnlineAtStop = s.onlineAtStop.Load()
	}
	return snap
}

// latencies is a log-linear histogram of durations in microseconds: 32
// sub-buckets per power of two, so any percentile is within about 3%.
type latencies struct {
	counts [64 * subBuckets]atomic.Int64
	max    atomic.Int64
}

const subBits = 5
const subBuckets = 1 << subBits

func bucketOf(us uint64) int {
	if us < subBuckets {
		return int(us)
	}
	exp := bits.Len64(us) - subBits // ≥ 1
	return exp*subBuckets + int(us>>(exp-1)) - subBuckets
}

// bucketTop is the largest value in bucket i.
func bucketTop(i int) uint64 {
	if i < subBuckets {
		return uint64(i)
	}
	exp := i / subBuckets
	sub := uint64(i%subBuckets + subBuckets)
	return (sub+1)<<(exp-1) - 1
}

func (l *latencies) add(d time.Duration) {
	us := uint64(max(d, 0) / time.Microsecond)
	l.counts[bucketOf(us)].Add(1)
	for {
		m := l.max.Load()
		if int64(us) <= m || l.max.CompareAndSwap(m, int64(us)) {
			return
		}
	}
}

func (l *latencies) percentiles() Percentiles {
	var counts [len(l.counts)]int64
	var n int64
	for i := range l.counts {
		counts[i] = l.counts[i].Load()
		n += counts[i]
	}
	p := Percentiles{Count: n, Max: time.Duration(l.max.Load()) * time.Microsecond}
	if n == 0 {
		return p
	}
	at := func(q float64) time.Duration {
		rank := int64(q*float64(n) + 0.5)
		rank = max(1, min(rank, n))
		var seen int64
		for i, c := range counts {
			seen += c
			if seen >= rank {
				return min(time.Duration(bucketTop(i))*time.Microsecond, p.Max)
			}
		}
		return p.Max
	}
	p.P50, p.P90, p.P99, p.P999 = at(0.50), at(0.90), at(0.99), at(0.999)
	return p
}
