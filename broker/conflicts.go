package broker

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/fleetcam/fleetcam/broker/mqttd"
	"github.com/fleetcam/fleetcam/store"
)

// A device message whose commit loses a transaction conflict to another
// writer (store.ErrTxConflict: the group commits of the nodes of a
// cluster meeting on the same rows) is committed again, after a short
// pause that doubles each time: the conflict is the server's own
// contention, and a device is never disconnected for it while its
// message may still wait.
const (
	// conflictBackoff is the first pause before a message is committed again.
	conflictBackoff = 5 * time.Millisecond
	// conflictBackoffMax bounds the pause between two tries.
	conflictBackoffMax = 500 * time.Millisecond
	// conflictWaitMax bounds how long a message is tried again. The
	// device's read loop waits meanwhile, so its keepalive pings go
	// unanswered: a device given a shorter keepalive waits that long.
	conflictWaitMax = 30 * time.Second
)

// conflictWait is how long a message of connection c may wait for its
// commit through conflicts: one keepalive interval of the device, since
// its pings are not answered meanwhile, and at most conflictWaitMax.
func conflictWait(c *mqttd.Conn) time.Duration {
	if k := c.Keepalive(); k > 0 && k < conflictWaitMax {
		return k
	}
	return conflictWaitMax
}

// commitMessage commits a device message's job as commit does, trying
// it again after a transaction conflict, with backoff, until it commits,
// fails otherwise, the connection ends or the message has waited
// conflictWait. Each conflict is counted. The record of a new connection
// (Online) is committed so too.
func (s *Server) commitMessage(c *mqttd.Conn, l *link, job func(*store.Tx) error) error {
	return s.throughConflicts(time.Now().Add(conflictWait(c)), c.Closed, func() error { return s.commitLinked(l, job) })
}

// throughConflicts runs commit until it ends other than in a transaction
// conflict, pausing between tries as long as deadline allows and gone
// (when given) says the connection lives.
func (s *Server) throughConflicts(deadline time.Time, gone func() bool, commit func() error) error {
	pause := conflictBackoff
	for {
		err := commit()
		if !errors.Is(err, store.ErrTxConflict) {
			return err
		}
		wait := pause/2 + rand.N(pause/2+1)
		if (gone != nil && gone()) || time.Now().Add(wait).After(deadline) {
			s.metrics.conflicts.WithLabelValues("expired").Inc()
			return err
		}
		s.metrics.conflicts.WithLabelValues("retried").Inc()
		time.Sleep(wait)
		pause = min(2*pause, conflictBackoffMax)
	}
}
