package broker

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// replyWaiters routes device replies to the Send calls awaiting them.
type replyWaiters struct {
	mu sync.Mutex
	m  map[string]*waiter
}

type waiter struct {
	imei, name string
	ch         chan protocol.Reply
}

func newReplyWaiters() *replyWaiters { return &replyWaiters{m: map[string]*waiter{}} }

func (r *replyWaiters) add(id, imei, name string) *waiter {
	w := &waiter{imei: imei, name: name, ch: make(chan protocol.Reply, 1)}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[id] = w
	return w
}

func (r *replyWaiters) remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, id)
}

// get returns the waiter of command id if it was sent to imei.
func (r *replyWaiters) get(id, imei string) *waiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w := r.m[id]; w != nil && w.imei == imei {
		return w
	}
	return nil
}

// Online reports whether imei holds a connection to this broker.
func (s *Server) Online(imei string) bool { return s.links.byIMEI(imei) != nil }

// DevicesOnline counts the devices with an authenticated connection to
// this broker: what this node answers when asked how many devices it
// holds (GET /v2/cluster).
func (s *Server) DevicesOnline() int { return s.links.online() }

// Presence returns the stored link state of imei: presence, last seen,
// firmware, product type, health and configuration versions. For a
// connected device, last seen is its latest stored message, which the
// store itself only records every lastSeenEvery.
func (s *Server) Presence(imei string) (store.DeviceLink, error) {
	var dl store.DeviceLink
	err := s.db.View(context.Background(), func(tx *store.Tx) error {
		var err error
		dl, err = s.PresenceTx(tx, imei)
		return err
	})
	return dl, err
}

// PresenceTx is Presence read in the caller's transaction. A caller that
// holds a transaction must use it: opening a second one inside it can
// deadlock against a writer that is growing the file.
func (s *Server) PresenceTx(tx *store.Tx, imei string) (store.DeviceLink, error) {
	var dl store.DeviceLink
	if _, err := tx.Device(imei); err != nil {
		return dl, err
	}
	l, err := tx.DeviceLink(imei)
	if l != nil {
		dl = *l
	}
	if err != nil {
		return dl, err
	}
	if l := s.links.byIMEI(imei); l != nil && l.id == dl.ConnectionID {
		if seen := l.lastSeen(); seen.After(dl.LastSeen) {
			dl.LastSeen = seen
		}
	}
	return dl, nil
}

// Send sends command name with args to the device and waits for its reply,
// at most mqtt.commandTimeout or until ctx ends. A device that is not
// connected (or not yet subscribed to its commands) gives ErrDeviceOffline
// at once; no reply in time gives ErrCommandTimeout; a reply with ok false
// is returned with an error wrapping ErrCommandFailed.
func (s *Server) Send(ctx context.Context, imei, name string, args any) (protocol.Reply, error) {
	if s.links.byIMEI(imei) == nil || !s.subscribed(imei, protocol.Topic(imei, protocol.TopicCommand)) {
		s.metrics.commands.WithLabelValues("offline").Inc()
		return protocol.Reply{}, fmt.Errorf("%w: %s", ErrDeviceOffline, imei)
	}
	raw, err := encodeArgs(args)
	if err != nil {
		return protocol.Reply{}, err
	}
	cmd := protocol.Command{ID: rand.Text(), Name: name, Args: raw, IssuedAt: s.now().Unix()}
	w := s.replies.add(cmd.ID, imei, name)
	defer s.replies.remove(cmd.ID)
	if err := s.publishCommand(imei, cmd); err != nil {
		return protocol.Reply{}, err
	}
	timer := time.NewTimer(s.cfg.CommandTimeout)
	defer timer.Stop()
	select {
	case r := <-w.ch:
		if !r.OK {
			s.metrics.commands.WithLabelValues("failed").Inc()
			return r, fmt.Errorf("%w: %s: %s", ErrCommandFailed, name, r.Error)
		}
		s.metrics.commands.WithLabelValues("ok").Inc()
		return r, nil
	case <-timer.C:
		s.metrics.commands.WithLabelValues("timeout").Inc()
		return protocol.Reply{}, fmt.Errorf("%w: %s to %s after %s", ErrCommandTimeout, name, imei, s.cfg.CommandTimeout)
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			s.metrics.commands.WithLabelValues("timeout").Inc()
			return protocol.Reply{}, fmt.Errorf("%w: %s to %s: %w", ErrCommandTimeout, name, imei, ctx.Err())
		}
		return protocol.Reply{}, ctx.Err()
	}
}

// Enqueue keeps command name durably until the device answers it, for
// changes that apply when the device comes back (privacy mode, a driver
// check-out). It is written in the caller's transaction, so it commits
// with the change that caused it or not at all, and is audited under the
// caller's actor. Once the transaction commits, the command is sent at
// once to a connected device; it goes again on every connection until a
// reply arrives.
func (s *Server) Enqueue(tx *store.Tx, imei, name string, args any) error {
	raw, err := encodeArgs(args)
	if err != nil {
		return err
	}
	if err := tx.QueueCommand(&store.QueuedCommand{ID: rand.Text(), IMEI: imei, Name: name, Args: raw}); err != nil {
		return err
	}
	tx.OnCommit(func() { s.queued.add(imei) })
	return nil
}

// pendingDelivery holds the devices with newly committed queued commands
// until the delivery loop sends them, so that a commit never waits for a
// device.
type pendingDelivery struct {
	mu    sync.Mutex
	imeis map[string]bool
	kick  chan struct{}
}

func newPendingDelivery() *pendingDelivery {
	return &pendingDelivery{imeis: map[string]bool{}, kick: make(chan struct{}, 1)}
}

func (p *pendingDelivery) add(imei string) {
	p.mu.Lock()
	p.imeis[imei] = true
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// take returns the devices added since the last take.
func (p *pendingDelivery) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.imeis))
	for imei := range p.imeis {
		out = append(out, imei)
	}
	clear(p.imeis)
	return out
}

// deliverCommitted sends newly committed queued commands to connected
// devices until the broker stops; devices offline get them on reconnect.
func (s *Server) deliverCommitted() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.queued.kick:
			for _, imei := range s.queued.take() {
				s.DeliverQueued(imei)
			}
		}
	}
}

// DeliverQueued sends the queued commands of imei not yet sent on its
// current connection; nothing happens while it is offline.
func (s *Server) DeliverQueued(imei string) {
	l := s.links.byIMEI(imei)
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.subscribed(imei, protocol.Topic(imei, protocol.TopicCommand)) {
		s.sendQueuedLocked(l)
	}
}

// sendQueuedLocked publishes the device's queued commands not yet sent on
// this connection, oldest first. The caller holds l.mu.
func (s *Server) sendQueuedLocked(l *link) {
	var cmds []store.QueuedCommand
	err := s.db.ViewDevice(context.Background(), l.imei, 0, func(tx *store.Tx) (err error) {
		cmds, err = tx.QueuedCommands(l.imei)
		return err
	})
	s.publishQueuedLocked(l, cmds, err)
}

// publishQueuedLocked publishes those of cmds not yet sent on this
// connection, unless they could not be read (err). The caller holds l.mu.
func (s *Server) publishQueuedLocked(l *link, cmds []store.QueuedCommand, err error) {
	if err != nil {
		s.log.Error("read queued commands", "imei", l.imei, "error", err)
		return
	}
	for _, c := range cmds {
		if l.sent[c.ID] {
			continue
		}
		cmd := protocol.Command{ID: c.ID, Name: c.Name, Args: c.Args, IssuedAt: c.QueuedAt.Unix()}
		if err := s.publishCommand(l.imei, cmd); err != nil {
			s.log.Error("send queued command", "imei", l.imei, "command", c.Name, "error", err)
			return
		}
		if l.sent == nil {
			l.sent = map[string]bool{}
		}
		l.sent[c.ID] = true
		s.metrics.commands.WithLabelValues("queued_sent").Inc()
	}
}

// publishCommand sends cmd with the MQTT 5 request/response properties; an
// MQTT 3.1.1 device finds the same id in the payload.
func (s *Server) publishCommand(imei string, cmd protocol.Command) error {
	return s.publishJSON(imei, protocol.TopicCommand, cmd, &packets.Properties{
		ResponseTopic:   protocol.Topic(imei, protocol.TopicReply),
		CorrelationData: []byte(cmd.ID),
	})
}

func encodeArgs(args any) (json.RawMessage, error) {
	if args == nil {
		return nil, nil
	}
	if raw, ok := args.(json.RawMessage); ok {
		return raw, nil
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("broker: encode command args: %w", err)
	}
	return raw, nil
}

// replied hands a reply to the Send waiting for it: once committed, or at
// once when committing it stores nothing (replyWrites).
func (s *Server) replied(imei string, r protocol.Reply) {
	if w := s.replies.get(r.ID, imei); w != nil {
		select {
		case w.ch <- r:
		default: // a redelivered reply; the first one was taken
		}
	}
}
