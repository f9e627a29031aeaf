package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/fleetcam/fleetcam/broker"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// What the API asks of devices, whichever node holds them. Each method
// goes to the broker for a device connected to this node, and over NATS
// for any other.

// commandRequest is a command for a device of another node.
type commandRequest struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
	// TimeoutMS is how long the device may take to answer.
	TimeoutMS int64 `json:"timeoutMs"`
}

// Command outcomes, as the holder's broker.Send ended.
const (
	outcomeOK      = "ok"
	outcomeOffline = "offline"
	outcomeTimeout = "timeout"
	outcomeFailed  = "failed"
	outcomeError   = "error"
)

// commandAnswer is the holder's answer: the device's reply and how the
// command ended.
type commandAnswer struct {
	Outcome string         `json:"outcome"`
	Reply   protocol.Reply `json:"reply"`
	// Error is the holder's error text for outcomeError.
	Error string `json:"error,omitempty"`
}

// Send sends a command to the device wherever it is connected and waits
// for its reply, with broker.Server.Send's errors: broker.ErrDeviceOffline
// when no node holds the device, broker.ErrCommandTimeout,
// broker.ErrCommandFailed; ErrUnavailable when the device is not on this
// node and NATS cannot be reached.
func (n *Node) Send(ctx context.Context, imei, name string, args any) (protocol.Reply, error) {
	if n.b.Online(imei) {
		return n.b.Send(ctx, imei, name, args)
	}
	if !n.nc.IsConnected() {
		return protocol.Reply{}, fmt.Errorf("%w: command %s to %s", ErrUnavailable, name, imei)
	}
	req := commandRequest{Name: name, TimeoutMS: n.timeout.Milliseconds()}
	if args != nil {
		raw, err := json.Marshal(args)
		if err != nil {
			return protocol.Reply{}, fmt.Errorf("cluster: encode command args: %w", err)
		}
		req.Args = raw
	}
	if dl, ok := ctx.Deadline(); ok {
		req.TimeoutMS = min(req.TimeoutMS, time.Until(dl).Milliseconds())
	}
	payload, _ := json.Marshal(req)
	rctx, cancel := context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond+replyMargin)
	defer cancel()
	msg, err := n.nc.RequestWithContext(rctx, deviceSubject(imei, "command"), payload)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return protocol.Reply{}, fmt.Errorf("%w: %s", broker.ErrDeviceOffline, imei)
	case err != nil && ctx.Err() != nil:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return protocol.Reply{}, fmt.Errorf("%w: %s to %s: %w", broker.ErrCommandTimeout, name, imei, ctx.Err())
		}
		return protocol.Reply{}, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return protocol.Reply{}, fmt.Errorf("%w: %s to %s: its node did not answer", broker.ErrCommandTimeout, name, imei)
	case err != nil:
		return protocol.Reply{}, fmt.Errorf("%w: command %s to %s: %w", ErrUnavailable, name, imei, err)
	}
	var a commandAnswer
	if err := json.Unmarshal(msg.Data, &a); err != nil {
		return protocol.Reply{}, fmt.Errorf("cluster: the answer to command %s to %s: %w", name, imei, err)
	}
	switch a.Outcome {
	case outcomeOK:
		return a.Reply, nil
	case outcomeOffline:
		return protocol.Reply{}, fmt.Errorf("%w: %s", broker.ErrDeviceOffline, imei)
	case outcomeTimeout:
		return protocol.Reply{}, fmt.Errorf("%w: %s to %s", broker.ErrCommandTimeout, name, imei)
	case outcomeFailed:
		return a.Reply, fmt.Errorf("%w: %s: %s", broker.ErrCommandFailed, name, a.Reply.Error)
	}
	return protocol.Reply{}, fmt.Errorf("cluster: command %s to %s on another node: %s", name, imei, a.Error)
}

// answerCommand runs a command another node asked for and answers how it
// went. A device this node no longer holds is left to the node that does:
// during a takeover both may hear the request, and the first answer counts.
func (n *Node) answerCommand(imei string, m *nats.Msg) {
	if !n.b.Online(imei) {
		return
	}
	var req commandRequest
	if err := json.Unmarshal(m.Data, &req); err != nil || req.Name == "" {
		n.respond(m, commandAnswer{Outcome: outcomeError, Error: "malformed command request"})
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(max(req.TimeoutMS, 1))*time.Millisecond)
	defer cancel()
	var args any
	if len(req.Args) > 0 {
		args = req.Args
	}
	reply, err := n.b.Send(ctx, imei, req.Name, args)
	a := commandAnswer{Outcome: outcomeOK, Reply: reply}
	switch {
	case err == nil:
	case errors.Is(err, broker.ErrDeviceOffline):
		a.Outcome = outcomeOffline
	case errors.Is(err, broker.ErrCommandTimeout):
		a.Outcome = outcomeTimeout
	case errors.Is(err, broker.ErrCommandFailed):
		a.Outcome = outcomeFailed
	default:
		n.log.Error("command for another node", "imei", imei, "command", req.Name, "err", err)
		a = commandAnswer{Outcome: outcomeError, Error: "the device's node could not send the command"}
	}
	n.respond(m, a)
}

func (n *Node) respond(m *nats.Msg, a commandAnswer) {
	raw, _ := json.Marshal(a)
	if err := m.Respond(raw); err != nil {
		n.log.Warn("answer a command of another node", "subject", m.Subject, "err", err)
	}
}

// Online reports whether the device is connected to any node. When NATS
// cannot tell, the store's presence does: a command that follows then
// says why it cannot reach the device.
func (n *Node) Online(imei string) bool {
	if n.b.Online(imei) {
		return true
	}
	if n.nc.IsConnected() {
		ctx, cancel := context.WithTimeout(context.Background(), whereTimeout)
		defer cancel()
		_, err := n.nc.RequestWithContext(ctx, deviceSubject(imei, "where"), nil)
		switch {
		case err == nil:
			return true
		case errors.Is(err, nats.ErrNoResponders):
			return false
		}
	}
	dl, err := n.b.Presence(imei)
	return err == nil && dl.Online()
}

// Enqueue stores a queued command in the caller's transaction, as
// broker.Server.Enqueue does; once committed, the node that holds the
// device sends it (the broker sends it itself to a device of this node).
func (n *Node) Enqueue(tx *store.Tx, imei, name string, args any) error {
	if err := n.b.Enqueue(tx, imei, name, args); err != nil {
		return err
	}
	tx.OnCommit(func() {
		if !n.b.Online(imei) {
			n.tell(imei, "queued")
		}
	})
	return nil
}

// PushConfig delivers the device's desired configuration now, on whichever
// node it is connected; a device connected nowhere gets it on its next
// connection.
func (n *Node) PushConfig(imei string) error {
	if n.b.Online(imei) {
		return n.b.PushConfig(imei)
	}
	return n.tell(imei, "config")
}

// Disconnect ends the device's connection on whichever node holds it
// (DISCONNECT 0x98) and reports whether it was connected to this node;
// the node that holds it, if another, ends it when the message arrives.
func (n *Node) Disconnect(imei string) bool {
	if n.b.Disconnect(imei) {
		return true
	}
	if err := n.tell(imei, "disconnect"); err != nil {
		n.log.Warn("end a device's connection on another node", "imei", imei, "err", err)
	}
	return false
}

// tell publishes verb to the node that holds the device, if any holds it.
func (n *Node) tell(imei, verb string) error {
	if err := n.nc.Publish(deviceSubject(imei, verb), nil); err != nil {
		return fmt.Errorf("%w: %s to %s: %w", ErrUnavailable, verb, imei, err)
	}
	return nil
}
