package broker

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/prometheus/client_golang/prometheus"
)

// fuzzTopics are the up/ topics whose payloads FuzzDevicePayload decodes,
// chosen by the input's selector.
var fuzzTopics = []string{protocol.TopicStatus, protocol.TopicGPS, protocol.TopicEvent,
	protocol.TopicConfigAck, protocol.TopicReply, protocol.TopicMedia}

// errRollback ends a fuzzed write without committing it.
var errRollback = errors.New("broker test: roll back")

// FuzzDevicePayload decodes a payload on one of the device's up/ topics as
// Publish does (its seeds, under testdata/fuzz, are what devicesim sends)
// and runs the write it yields against a real store, then rolls it back.
// A payload is stored or refused with 0x99 and a reason: it never panics,
// and never fails the write in a way that would disconnect the device to
// have the message sent again, forever.
func FuzzDevicePayload(f *testing.F) {
	clock := storetest.NewClock(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	db := storetest.Open(f, storetest.WithClock(clock.Now))
	id := imei(1)
	var dev *store.Device
	err := db.Update(f.Context(), store.Actor{Source: "cli"}, func(tx *store.Tx) error {
		p, err := tx.CreatePartner("Partner")
		if err != nil {
			return err
		}
		org, err := tx.CreateOrganization(p.ID, "Fleet", []byte("salt"))
		if err != nil {
			return err
		}
		dev = &store.Device{IMEI: id, Name: "cam", OrganizationID: org.ID, PartnerID: org.PartnerID}
		if err := tx.AddDevice(dev); err != nil {
			return err
		}
		return tx.PutDeviceLink(&store.DeviceLink{IMEI: id, Presence: store.PresenceOnline, ConnectionID: "fuzz"})
	})
	if err != nil {
		f.Fatal(err)
	}
	s, err := New(configs.Default(), db, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), clock.Now)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, sel byte, payload []byte) {
		suffix := fuzzTopics[int(sel)%len(fuzzTopics)]
		l := &link{id: "fuzz", imei: id, dev: *dev, pushed: -1}
		pk := &packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1},
			TopicName: protocol.Topic(id, suffix), Payload: payload}
		job, _, code := s.ingestJob(l, suffix, pk)
		if job == nil {
			if code.Code != packets.ErrPayloadFormatInvalid.Code || code.Reason == "" {
				t.Fatalf("%s refused with 0x%02X %q, want 0x99 and a reason", suffix, code.Code, code.Reason)
			}
			return
		}
		err := db.Update(t.Context(), deviceActor(dev), func(tx *store.Tx) error {
			if err := job(tx); err != nil {
				return err
			}
			return errRollback
		})
		var refused packets.Code
		switch {
		case errors.Is(err, errRollback):
		case errors.As(err, &refused), errors.Is(err, store.ErrInvalid), errors.Is(err, store.ErrNotFound):
			// Publish refuses these with 0x99 and their reason.
		default:
			t.Fatalf("%s payload %q: the write failed with %v, which disconnects the device", suffix, payload, err)
		}
	})
}
