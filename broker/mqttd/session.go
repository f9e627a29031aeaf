package mqttd

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// message is a QoS 1 message from the server to a client.
type message struct {
	topic         string
	payload       []byte
	responseTopic string
	correlation   []byte
	id            uint16 // packet identifier while in flight
}

type subscription struct {
	filter string
	qos    byte
}

// session is what the server keeps of a client across its connections:
// subscriptions, the messages in flight and those waiting for room.
type session struct {
	s  *Server
	id string

	// conn is the current connection, nil while the client is offline. It
	// changes under both Server.mu and mu, so holding either keeps it
	// still; Server.mu holders read it without taking mu, which a write
	// to a slow client may hold for up to the write timeout.
	conn atomic.Pointer[Conn]

	mu        sync.Mutex
	connacked bool // the current connection's CONNACK went out: messages may be written
	subs      []subscription
	inflight  []*message // sent and not acknowledged, oldest first
	pending   []*message // waiting for the client's receive quota or its next connection
	quota     int        // the current connection's receive maximum
	lastID    uint16
	expiresAt time.Time // while offline: when the session is dropped
	gone      bool      // dropped; it takes no more messages
}

// attach gives connection c its client's session, ending any earlier
// connection of the client first (MQTT 5: DISCONNECT 0x8E). A clean start
// discards the earlier session. It reports whether a session was resumed.
func (s *Server) attach(c *Conn, clean bool) (*session, bool, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, false, ErrClosed
		}
		if old := s.ending[c.id]; old != nil && old != c {
			s.mu.Unlock()
			if err := s.waitEnd(old); err != nil {
				return nil, false, err
			}
			continue
		}
		ss := s.sessions[c.id]
		if ss != nil {
			if old := ss.conn.Load(); old != nil && old != c {
				s.mu.Unlock()
				old.Close(packets.ErrSessionTakenOver)
				if err := s.waitEnd(old); err != nil {
					return nil, false, err
				}
				continue
			}
			// Offline: nothing holds mu for long.
			ss.mu.Lock()
			expired := !ss.expiresAt.IsZero() && s.opts.Now().After(ss.expiresAt)
			if !clean && !expired {
				ss.conn.Store(c)
				ss.connacked, ss.expiresAt, ss.quota = false, time.Time{}, c.quota()
				ss.mu.Unlock()
				s.mu.Unlock()
				return ss, true, nil
			}
			ss.discardLocked()
			ss.mu.Unlock()
		}
		ss = &session{s: s, id: c.id, quota: c.quota()}
		ss.conn.Store(c)
		s.sessions[c.id] = ss
		s.mu.Unlock()
		return ss, false, nil
	}
}

// waitEnd waits until connection old has ended, Handler.Closed included.
func (s *Server) waitEnd(old *Conn) error {
	select {
	case <-old.done:
		return nil
	case <-time.After(s.opts.ConnectTimeout):
		return errors.New("mqttd: the client's previous connection did not end")
	}
}

// detach ends connection c's hold on the session: a session without expiry
// is dropped, any other is kept for expiry seconds.
func (ss *session) detach(c *Conn, expiry time.Duration) {
	s := ss.s
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.conn.Load() != c {
		return
	}
	ss.conn.Store(nil)
	s.ending[ss.id] = c
	if expiry > 0 {
		ss.expiresAt = s.opts.Now().Add(expiry)
		return
	}
	if s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
	}
	ss.discardLocked()
}

// discardLocked empties a session that is being dropped. The caller holds ss.mu.
func (ss *session) discardLocked() {
	info := &ss.s.info
	info.Inflight.Add(-int64(len(ss.inflight)))
	info.Subscriptions.Add(-int64(len(ss.subs)))
	ss.subs, ss.inflight, ss.pending, ss.gone = nil, nil, nil, true
}

// publish sends msg, or keeps it for later, when a subscription matches.
func (ss *session) publish(msg *message) (bool, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.gone {
		return false, nil
	}
	switch ss.grantedQos(msg.topic) {
	case -1:
		return false, nil
	case 0:
		// At most once: sent now to a connected client, or not at all.
		conn := ss.conn.Load()
		if conn == nil || !ss.connacked {
			return false, nil
		}
		if err := conn.writePublish(msg, 0, false); err != nil {
			if errors.Is(err, errTooLargeForClient) {
				ss.s.info.MessagesDropped.Add(1)
			}
			return false, err
		}
		return true, nil
	}
	if ss.conn.Load() != nil && ss.connacked && len(ss.pending) == 0 && len(ss.inflight) < ss.quota {
		if err := ss.sendLocked(msg); err != nil {
			return false, err
		}
		return true, nil
	}
	if len(ss.pending) >= ss.s.opts.MaxPending {
		ss.s.info.MessagesDropped.Add(1)
		return false, errors.New("mqttd: the session of " + ss.id + " holds too many messages")
	}
	ss.pending = append(ss.pending, msg)
	return true, nil
}

// sendLocked puts msg in flight and writes it. A message the connection
// could not take stays in flight for the next connection, unless the
// client cannot take it at all. The caller holds ss.mu.
func (ss *session) sendLocked(msg *message) error {
	msg.id = ss.nextIDLocked()
	ss.inflight = append(ss.inflight, msg)
	ss.s.info.Inflight.Add(1)
	err := ss.conn.Load().writePublish(msg, 1, false)
	if errors.Is(err, errTooLargeForClient) {
		ss.inflight = ss.inflight[:len(ss.inflight)-1]
		ss.s.info.Inflight.Add(-1)
		ss.s.info.MessagesDropped.Add(1)
		return err
	}
	return nil
}

// nextIDLocked returns a packet identifier no message in flight uses.
func (ss *session) nextIDLocked() uint16 {
	for {
		ss.lastID++
		if ss.lastID == 0 {
			ss.lastID = 1
		}
		if !ss.inflightLocked(ss.lastID) {
			return ss.lastID
		}
	}
}

func (ss *session) inflightLocked(id uint16) bool {
	return slices.ContainsFunc(ss.inflight, func(m *message) bool { return m.id == id })
}

// inFlight reports whether a message in flight uses packet identifier id.
func (ss *session) inFlight(id uint16) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.inflightLocked(id)
}

// resume sends what was in flight again (DUP set), then what waits. It
// runs once the CONNACK went out; until then messages wait.
func (ss *session) resume(c *Conn) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.conn.Load() != c {
		return
	}
	ss.connacked = true
	// The new connection may allow fewer messages in flight than the old
	// one had: those beyond its quota wait at the head of the queue.
	if extra := len(ss.inflight) - ss.quota; extra > 0 {
		ss.pending = append(slices.Clone(ss.inflight[ss.quota:]), ss.pending...)
		ss.inflight = ss.inflight[:ss.quota]
		ss.s.info.Inflight.Add(-int64(extra))
	}
	kept := make([]*message, 0, len(ss.inflight))
	for i, m := range ss.inflight {
		err := c.writePublish(m, 1, true)
		if errors.Is(err, errTooLargeForClient) {
			// This connection's client takes smaller packets than the
			// last one's: the message can never reach it.
			ss.s.info.Inflight.Add(-1)
			ss.s.info.MessagesDropped.Add(1)
			continue
		}
		if err != nil { // the connection ended: the rest wait for the next one
			kept = append(kept, ss.inflight[i:]...)
			break
		}
		kept = append(kept, m)
	}
	ss.inflight = kept
	ss.fillLocked()
}

// fillLocked sends waiting messages while the receive quota allows.
func (ss *session) fillLocked() {
	for ss.conn.Load() != nil && ss.connacked && len(ss.pending) > 0 && len(ss.inflight) < ss.quota {
		msg := ss.pending[0]
		ss.pending[0] = nil
		ss.pending = ss.pending[1:]
		if len(ss.pending) == 0 {
			ss.pending = nil
		}
		_ = ss.sendLocked(msg)
	}
}

// acked ends the flight of the message with packet identifier id.
func (ss *session) acked(id uint16) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	i := slices.IndexFunc(ss.inflight, func(m *message) bool { return m.id == id })
	if i < 0 {
		return
	}
	ss.inflight = slices.Delete(ss.inflight, i, i+1)
	ss.s.info.Inflight.Add(-1)
	ss.fillLocked()
}

// subscribe adds filter or updates its QoS. It reports false, changing
// nothing, when the session already holds MaxSubscriptions other filters.
func (ss *session) subscribe(filter string, qos byte) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for i := range ss.subs {
		if ss.subs[i].filter == filter {
			ss.subs[i].qos = qos
			return true
		}
	}
	if len(ss.subs) >= ss.s.opts.MaxSubscriptions {
		return false
	}
	ss.subs = append(ss.subs, subscription{filter: filter, qos: qos})
	ss.s.info.Subscriptions.Add(1)
	return true
}

// unsubscribe removes filter and reports whether it was there.
func (ss *session) unsubscribe(filter string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	i := slices.IndexFunc(ss.subs, func(sub subscription) bool { return sub.filter == filter })
	if i < 0 {
		return false
	}
	ss.subs = slices.Delete(ss.subs, i, i+1)
	ss.s.info.Subscriptions.Add(-1)
	return true
}

// matches reports whether a subscription matches topic. The caller holds ss.mu.
func (ss *session) matches(topic string) bool { return ss.grantedQos(topic) >= 0 }

// grantedQos is the highest QoS granted to a subscription matching topic,
// or -1 when none matches. The caller holds ss.mu.
func (ss *session) grantedQos(topic string) int {
	qos := -1
	for _, sub := range ss.subs {
		if matchFilter(sub.filter, topic) {
			qos = max(qos, int(sub.qos))
		}
	}
	return qos
}

// matchFilter reports whether topic name topic matches filter: "+" stands
// for one level, a final "#" for any number of levels, including none. A
// topic starting with "$" matches no filter starting with a wildcard.
func matchFilter(filter, topic string) bool {
	if strings.HasPrefix(topic, "$") && (strings.HasPrefix(filter, "+") || strings.HasPrefix(filter, "#")) {
		return false
	}
	for {
		f, frest, fmore := strings.Cut(filter, "/")
		if f == "#" {
			return true
		}
		t, trest, tmore := strings.Cut(topic, "/")
		if f != "+" && f != t {
			return false
		}
		switch {
		case !fmore && !tmore:
			return true
		case !tmore:
			return frest == "#" // "a/#" matches "a"
		case !fmore:
			return false
		}
		filter, topic = frest, trest
	}
}

// validFilter reports whether filter is a well-formed topic filter: not
// empty, "#" only as the whole last level, "+" only as a whole level.
func validFilter(filter string) bool {
	if filter == "" || len(filter) > 65535 || strings.ContainsRune(filter, 0) {
		return false
	}
	levels := strings.Split(filter, "/")
	for i, l := range levels {
		switch {
		case l == "#" && i != len(levels)-1:
			return false
		case l != "#" && l != "+" && strings.ContainsAny(l, "#+"):
			return false
		}
	}
	return true
}
