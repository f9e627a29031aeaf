package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/fleetcam/fleetcam/broker"
	"github.com/fleetcam/fleetcam/broker/cluster"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/cloudapi"
	"github.com/fleetcam/fleetcam/store"
)

// deviceLink lets the API reach devices through the broker: it is the
// cloudapi Commander and Presence, translating the broker's errors and
// types into the ones the API declares.
type deviceLink struct {
	// b keeps the devices' link state, for Presence.
	b *broker.Server
	// devices reaches the devices: the broker itself on a fleetcam alone,
	// the cluster node (the broker for the devices of this node, NATS for
	// the others) on a node of a cluster.
	devices devices
	log     *slog.Logger
}

// devices is what the API needs of the devices' connections; the broker
// and the cluster node each provide it.
type devices interface {
	Send(ctx context.Context, imei, name string, args any) (protocol.Reply, error)
	Enqueue(tx *store.Tx, imei, name string, args any) error
	PushConfig(imei string) error
	Online(imei string) bool
	Disconnect(imei string) bool
}

var (
	_ devices = (*broker.Server)(nil)
	_ devices = (*cluster.Node)(nil)
)

var (
	_ cloudapi.Commander = deviceLink{}
	_ cloudapi.Presence  = deviceLink{}
)

// Send delivers a command and returns the result of the device's reply.
func (d deviceLink) Send(ctx context.Context, imei, name string, args any) (json.RawMessage, error) {
	reply, err := d.devices.Send(ctx, imei, name, args)
	switch {
	case errors.Is(err, cluster.ErrUnavailable):
		return nil, fmt.Errorf("%s: %w", name, cloudapi.ErrDeviceUnreachable)
	case errors.Is(err, broker.ErrDeviceOffline):
		return nil, fmt.Errorf("%s: %w", name, cloudapi.ErrDeviceOffline)
	case errors.Is(err, broker.ErrCommandTimeout):
		return nil, fmt.Errorf("%s: %w", name, cloudapi.ErrCommandTimeout)
	case errors.Is(err, broker.ErrCommandFailed):
		return reply.Result, fmt.Errorf("%s: %s: %w", name, reply.Error, cloudapi.ErrCommandFailed)
	case err != nil:
		return nil, err
	}
	return reply.Result, nil
}

// Enqueue stores a command in the caller's transaction for delivery once
// committed, or on reconnect.
func (d deviceLink) Enqueue(tx *store.Tx, imei, name string, args any) error {
	if commandCommitted != nil {
		tx.OnCommit(commandCommitted)
	}
	return d.devices.Enqueue(tx, imei, name, args)
}

// commandCommitted, when set, runs once a change that queues a device
// command is committed, before anything follows that commit. It is nil in
// fleetcam; the crash tests set it in a child process (TestMain) to kill
// fleetcam at that point.
var commandCommitted func()

// PushConfig sends the desired configuration to an online device; an error
// only means this push failed, since the configuration goes again on reconnect.
func (d deviceLink) PushConfig(imei string) {
	if err := d.devices.PushConfig(imei); err != nil {
		d.log.Warn("push configuration; it is sent again on the next connection", "imei", imei, "err", err)
	}
}

// Online reports whether the device is connected.
func (d deviceLink) Online(imei string) bool { return d.devices.Online(imei) }

// Disconnect ends the device's connection, wherever it is connected.
func (d deviceLink) Disconnect(imei string) { d.devices.Disconnect(imei) }

// Presence reports the device's last known link; a device that never
// connected is not present.
func (d deviceLink) Presence(tx *store.Tx, imei string) (cloudapi.DeviceConnection, bool) {
	l, err := d.b.PresenceTx(tx, imei)
	if err != nil || l.Presence == "" {
		return cloudapi.DeviceConnection{}, false
	}
	status := cloudapi.ConnectionOffline
	switch l.Presence {
	case store.PresenceOnline:
		status = cloudapi.ConnectionOnline
	case store.PresenceStandby:
		status = cloudapi.ConnectionStandby
	}
	return cloudapi.DeviceConnection{Status: status, LastSeen: l.LastSeen, FirmwareVersion: l.Firmware,
		ReportedConfigVersion: l.AckedConfigVersion}, true
}
