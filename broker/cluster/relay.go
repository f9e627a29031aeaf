package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/fleetcam/fleetcam/broker"
)

// What the API's nodes tell each other beyond device commands: requests
// to the node that holds a device (HandleHeld, AskHolder), and plain
// subjects of the API's own (Request, Publish, Subscribe) under
// fleetcam.api.>, for things such as a live stream, which lives on one
// node while its frames and viewers may come through any other.

// ErrNobody means nothing in the cluster answers the subject asked: the
// thing it names (a live stream...) exists on no node.
var ErrNobody = errors.New("cluster: no node answers")

// HeldHandler answers a request about a device this node holds. Its
// answer goes back to the asking node as it is; an error is answered as
// its text, which the asking node gets as an error of ErrHandler.
type HeldHandler func(ctx context.Context, imei string, data []byte) ([]byte, error)

// heldTimeout bounds a HeldHandler's work; handlers keep their own,
// shorter, deadlines (a device's command timeout...).
const heldTimeout = time.Minute

// ErrHandler wraps the error a HeldHandler of another node returned.
var ErrHandler = errors.New("cluster: the device's node answered an error")

// builtinVerbs are the device subjects the node answers itself.
var builtinVerbs = map[string]bool{"command": true, "where": true, "config": true, "queued": true, "disconnect": true}

// HandleHeld makes fn answer verb for the devices this node holds, on
// fleetcam.device.<imei>.<verb>. Register handlers before devices connect.
func (n *Node) HandleHeld(verb string, fn func(ctx context.Context, imei string, data []byte) ([]byte, error)) {
	if builtinVerbs[verb] || verb == "" || strings.ContainsAny(verb, ".*> ") {
		panic("cluster: HandleHeld: reserved or malformed verb " + verb)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.handlers == nil {
		n.handlers = map[string]HeldHandler{}
	}
	n.handlers[verb] = fn
}

func (n *Node) handler(verb string) HeldHandler {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.handlers[verb]
}

// heldAnswer is a handler's answer on the wire: its data, or its error.
const (
	answerOK    = 'o'
	answerError = 'e'
)

// answerHeld runs the handler of verb for a device this node holds.
func (n *Node) answerHeld(imei string, fn HeldHandler, m *nats.Msg) {
	if !n.b.Online(imei) {
		return // the node that holds it now answers
	}
	ctx, cancel := context.WithTimeout(context.Background(), heldTimeout)
	defer cancel()
	out, err := fn(ctx, imei, m.Data)
	answer := append([]byte{answerOK}, out...)
	if err != nil {
		answer = append([]byte{answerError}, err.Error()...)
	}
	if err := m.Respond(answer); err != nil {
		n.log.Warn("answer a request of another node", "subject", m.Subject, "err", err)
	}
}

// AskHolder sends verb with data to the handler of the node that holds
// imei (this node's own when it holds it) and returns its answer. Errors:
// broker.ErrDeviceOffline when no node holds the device, ErrUnavailable
// when it is not on this node and NATS cannot be reached, ErrHandler
// wrapping the handler's error text.
func (n *Node) AskHolder(ctx context.Context, imei, verb string, data []byte) ([]byte, error) {
	if n.b.Online(imei) {
		fn := n.handler(verb)
		if fn == nil {
			return nil, fmt.Errorf("cluster: no handler for %s", verb)
		}
		return fn(ctx, imei, data)
	}
	if !n.nc.IsConnected() {
		return nil, fmt.Errorf("%w: %s for %s", ErrUnavailable, verb, imei)
	}
	rctx, cancel := context.WithTimeout(ctx, heldTimeout+replyMargin)
	defer cancel()
	msg, err := n.nc.RequestWithContext(rctx, deviceSubject(imei, verb), data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("%w: %s", broker.ErrDeviceOffline, imei)
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, fmt.Errorf("%w: %s for %s: %w", ErrUnavailable, verb, imei, err)
	case len(msg.Data) == 0:
		return nil, fmt.Errorf("cluster: empty answer to %s for %s", verb, imei)
	case msg.Data[0] == answerError:
		return nil, fmt.Errorf("%w: %s", ErrHandler, msg.Data[1:])
	}
	return msg.Data[1:], nil
}

// apiSubject is subject under the API's own prefix.
func apiSubject(subject string) string { return "fleetcam.api." + subject }

// Request sends data on the API subject and returns the first answer:
// ErrNobody when nothing listens on it, ErrUnavailable when NATS cannot
// be reached.
func (n *Node) Request(ctx context.Context, subject string, data []byte) ([]byte, error) {
	if !n.nc.IsConnected() {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, subject)
	}
	msg, err := n.nc.RequestWithContext(ctx, apiSubject(subject), data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("%w: %s", ErrNobody, subject)
	case errors.Is(err, nats.ErrMaxPayload):
		return nil, fmt.Errorf("cluster: %d bytes are more than NATS carries in a message (max_payload %d): %w",
			len(data), n.nc.MaxPayload(), err)
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, fmt.Errorf("%w: %s: %w", ErrUnavailable, subject, err)
	}
	return msg.Data, nil
}

// MaxPayload is the largest message NATS carries, in bytes.
func (n *Node) MaxPayload() int64 { return n.nc.MaxPayload() }

// Publish sends data on the API subject to whoever listens, if anyone.
func (n *Node) Publish(subject string, data []byte) error {
	if err := n.nc.Publish(apiSubject(subject), data); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, subject, err)
	}
	return nil
}

// Subscribe calls fn with every message on the API subject (NATS
// wildcards allowed) until the returned stop is called; for a request,
// fn's answer (nil for none) goes back to the asker. fn gets the
// subject without the API prefix.
func (n *Node) Subscribe(subject string, fn func(subject string, data []byte) []byte) (stop func(), err error) {
	sub, err := n.nc.Subscribe(apiSubject(subject), func(m *nats.Msg) {
		out := fn(strings.TrimPrefix(m.Subject, apiSubject("")), m.Data)
		if m.Reply != "" && out != nil {
			if err := m.Respond(out); err != nil {
				n.log.Warn("answer a request of another node", "subject", m.Subject, "err", err)
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("%w: subscribe %s: %w", ErrUnavailable, subject, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}
