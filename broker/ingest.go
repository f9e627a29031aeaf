package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/mqttd"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// invalid is a device message the broker refuses with code 0x99 and the
// reason (see mqttd.Server for how each protocol version is answered).
func invalid(format string, a ...any) packets.Code {
	return packets.Code{Code: packets.ErrPayloadFormatInvalid.Code, Reason: fmt.Sprintf(format, a...)}
}

// Publish stores what a device publishes. It runs in the device's read loop
// and waits for its own message to be committed, so a QoS 1 PUBACK means
// the message is on disk. A device publishes only to its own up/ topics;
// its messages reach no other client.
func (h deviceHandler) Publish(c *mqttd.Conn, pk *packets.Packet) error {
	s := h.s
	l := s.links.byConn(c)
	if l == nil || !topicAllowed(l.imei, pk.TopicName, true) {
		return packets.ErrNotAuthorized
	}
	_, suffix, _ := protocol.SplitTopic(pk.TopicName)
	topic := topicLabel(suffix)
	job, after, code := s.ingestJob(l, suffix, pk)
	if code == (packets.Code{}) {
		err := s.commit(&l.dev, job)
		var bad packets.Code
		switch {
		case err == nil:
			l.seen.Store(s.now().UnixNano())
			if after != nil {
				after()
			}
			s.metrics.ingest.WithLabelValues(topic, "stored").Inc()
			return nil
		case errors.As(err, &bad):
			code = bad
		case errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrNotFound):
			code = invalid("%s", storeReason(err))
		default:
			// Not acknowledged: the MQTT server disconnects the device,
			// which keeps the message and sends it again on its next connection.
			s.metrics.ingest.WithLabelValues(topic, "store_error").Inc()
			s.log.Error("store device message; disconnecting the device", "imei", l.imei, "topic", suffix, "error", err)
			return err
		}
	}
	s.metrics.ingest.WithLabelValues(topic, "invalid").Inc()
	s.log.Warn("device message refused", "imei", l.imei, "topic", suffix, "reason", code.Reason)
	return code
}

// ingestJob decodes a message and returns the write that stores it and what
// to do once it is committed, or the code refusing it.
func (s *Server) ingestJob(l *link, suffix string, pk *packets.Packet) (func(*store.Tx) error, func(), packets.Code) {
	var none packets.Code
	switch suffix {
	case protocol.TopicStatus:
		var st protocol.Status
		if c := decode(pk.Payload, &st); c != none {
			return nil, nil, c
		}
		if st.Firmware == "" || !validFirmware(st.Firmware) {
			return nil, nil, invalid("firmware must be a version such as 3.12.1")
		}
		if st.State != "" && st.State != store.PresenceOnline && st.State != store.PresenceStandby {
			return nil, nil, invalid("state must be online or standby")
		}
		return s.withDevice(l, func(tx *store.Tx, dev *store.Device) error { return s.applyStatus(tx, l, dev, st) }), nil, none
	case protocol.TopicGPS:
		var b protocol.GPSBatch
		if c := decode(pk.Payload, &b); c != none {
			return nil, nil, c
		}
		points := make([]store.GPSPoint, len(b.Samples))
		for i, g := range b.Samples {
			points[i] = store.GPSPoint{Time: time.UnixMilli(g.Time).UTC(), Lat: g.Lat, Lon: g.Lon, Alt: g.Alt,
				Speed: g.Speed, Accuracy: g.Accuracy, Heading: g.Heading}
			if err := store.ValidGPSPoint(points[i]); err != nil {
				return nil, nil, invalid("samples[%d]: %s", i, storeReason(err))
			}
		}
		return s.withDevice(l, func(tx *store.Tx, dev *store.Device) error { return s.applyGPS(tx, dev, points) }), nil, none
	case protocol.TopicEvent:
		var ev protocol.Event
		if c := decode(pk.Payload, &ev); c != none {
			return nil, nil, c
		}
		switch {
		case ev.ID == "":
			return nil, nil, invalid("id must be the device's unique event id")
		case ev.Type == "":
			return nil, nil, invalid("type must name the event type")
		case !knownEvent(ev.Type):
			return nil, nil, invalid("type %q is not a known event type (API syntax)", ev.Type)
		case ev.Time <= 0:
			return nil, nil, invalid("time must be a positive unix time in milliseconds")
		}
		return s.withDevice(l, func(tx *store.Tx, dev *store.Device) error { return s.eventHandler()(tx, dev, ev) }), nil, none
	case protocol.TopicConfigAck:
		var ack protocol.ConfigAck
		if c := decode(pk.Payload, &ack); c != none {
			return nil, nil, c
		}
		if ack.Version < 0 {
			return nil, nil, invalid("version must not be negative")
		}
		job := s.withDevice(l, func(tx *store.Tx, _ *store.Device) error { return applyConfigAck(tx, l.imei, ack) })
		return job, func() { _ = s.PushConfig(l.imei) }, none
	case protocol.TopicReply:
		var r protocol.Reply
		if c := decode(pk.Payload, &r); c != none {
			return nil, nil, c
		}
		if id := string(pk.Properties.CorrelationData); id != "" {
			r.ID = id
		}
		if r.ID == "" {
			return nil, nil, invalid("id must carry the command id (or use MQTT 5 correlation data)")
		}
		job := s.withDevice(l, func(tx *store.Tx, dev *store.Device) error { return s.applyReply(tx, dev, r) })
		return job, func() { s.replied(l.imei, r) }, none
	case protocol.TopicMedia:
		var m protocol.MediaReady
		if c := decode(pk.Payload, &m); c != none {
			return nil, nil, c
		}
		if m.FileID == "" {
			return nil, nil, invalid("fileId must name the uploaded file")
		}
		return s.withDevice(l, func(tx *store.Tx, dev *store.Device) error {
			if s.MediaHandler == nil {
				return nil
			}
			return s.MediaHandler(tx, dev, m)
		}), nil, none
	}
	return nil, nil, packets.Code{Code: packets.ErrTopicNameInvalid.Code, Reason: "unknown topic up/" + suffix}
}

// storeReason is a store validation error without its sentinel suffix.
func storeReason(err error) string {
	msg := err.Error()
	for _, sentinel := range []error{store.ErrInvalid, store.ErrNotFound} {
		msg = strings.TrimSuffix(msg, ": "+sentinel.Error())
	}
	return msg
}

// decode unmarshals a JSON payload strictly enough to name what is wrong:
// one JSON value and nothing after it.
func decode(payload []byte, v any) packets.Code {
	if err := json.Unmarshal(payload, v); err != nil {
		return invalid("payload must be a JSON object of the topic's type: %v", err)
	}
	return packets.Code{}
}

// withDevice wraps a job so that it reads the device's current inventory
// entry and, at most every lastSeenEvery, refreshes its stored last-seen time.
func (s *Server) withDevice(l *link, fn func(tx *store.Tx, dev *store.Device) error) func(*store.Tx) error {
	return func(tx *store.Tx) error {
		dev, err := l.device(tx)
		if err != nil {
			return err
		}
		if err := fn(tx, &dev); err != nil {
			return err
		}
		now := tx.Now()
		if now.Sub(l.seenSaved) < lastSeenEvery {
			return nil
		}
		dl, err := tx.DeviceLink(l.imei)
		if err != nil {
			return err
		}
		if dl.ConnectionID != l.id {
			return nil
		}
		dl.LastSeen = now
		if err := tx.PutDeviceLink(dl); err != nil {
			return err
		}
		tx.OnCommit(func() { l.seenSaved = now })
		return nil
	}
}

// applyStatus stores a status report and runs the StatusHandler.
func (s *Server) applyStatus(tx *store.Tx, l *link, dev *store.Device, st protocol.Status) error {
	dl, err := tx.DeviceLink(l.imei)
	if err != nil {
		return err
	}
	prev := *dl
	if dl.ConnectionID == l.id {
		dl.Presence = store.PresenceOnline
		if st.State == store.PresenceStandby {
			dl.Presence = store.PresenceStandby
		}
	}
	dl.Firmware, dl.ProductType, dl.Health = st.Firmware, st.ProductType, Health(st, tx.Now())
	if err := tx.PutDeviceLink(dl); err != nil {
		return err
	}
	if err := s.emitPresence(tx, dev, prev.Presence, dl.Presence); err != nil {
		return err
	}
	if st.ProductType != "" && st.ProductType != dev.ProductType {
		dev.ProductType = st.ProductType
		if err := tx.UpdateDevice(dev, "device.productType.report"); err != nil {
			return err
		}
	}
	if s.StatusHandler != nil {
		return s.StatusHandler(tx, dev, &prev, st)
	}
	return nil
}

// Health maps a status report from the wire to the device health the store
// records, as reported at now.
func Health(st protocol.Status, now time.Time) *store.DeviceHealth {
	h := &store.DeviceHealth{RecordingTest: st.RecordingTest, PowerConnected: st.PowerConnected,
		AdasCalibrated: st.AdasCalibrated, ReportedAt: now}
	if st.SDCard != nil {
		h.SDCard = &store.SDCardHealth{Present: st.SDCard.Present, Healthy: st.SDCard.Healthy,
			UUID: st.SDCard.UUID, Manufacturer: st.SDCard.Manufacturer}
	}
	for _, c := range st.Cameras {
		h.Cameras = append(h.Cameras, store.CameraHealth{ID: c.ID, Connected: c.Connected, Kind: c.Kind, SerialNumber: c.SerialNumber})
	}
	if st.DataUsage != nil {
		h.DataUsage = &store.DataUsage{PeriodStart: time.Unix(st.DataUsage.PeriodStart, 0).UTC(),
			BytesUp: st.DataUsage.BytesUp, BytesDown: st.DataUsage.BytesDown}
	}
	if st.Hotspot != nil {
		on := st.Hotspot.On
		h.HotspotOn = &on
	}
	return h
}

// applyGPS stores a GPS batch, emits the new samples for the GPS webhooks
// and runs the GPSHandler on them. An organization none of whose URLs
// receives GPS webhooks gets no message: GPS is most of what devices send,
// and a message no URL receives would only be written, read and dropped.
func (s *Server) applyGPS(tx *store.Tx, dev *store.Device, points []store.GPSPoint) error {
	added, err := tx.AddGPS(dev, points)
	if err != nil || len(added) == 0 {
		return err
	}
	if tx.HasWebhookReceivers(dev.OrganizationID, store.WebhookTypeGPS) {
		if err := tx.Emit(store.Message{Kind: store.MessageGPS, OrganizationID: dev.OrganizationID,
			PartnerID: dev.PartnerID, IMEI: dev.IMEI, GPS: added}); err != nil {
			return err
		}
	}
	if s.GPSHandler != nil {
		return s.GPSHandler(tx, dev, added)
	}
	return store.GPSHook(tx, dev, added)
}

// applyConfigAck records the acknowledged version and reported configuration.
func applyConfigAck(tx *store.Tx, imei string, ack protocol.ConfigAck) error {
	dl, err := tx.DeviceLink(imei)
	if err != nil {
		return err
	}
	dl.AckedConfigVersion = max(dl.AckedConfigVersion, ack.Version)
	dl.ConfigAckedAt = tx.Now()
	if len(ack.Reported) > 0 {
		dl.ReportedConfig = append(json.RawMessage(nil), ack.Reported...)
	}
	return tx.PutDeviceLink(dl)
}

// knownEvent reports whether typ is an event kind of the catalogue, by its
// API syntax (an alias is accepted and stored under its API name by the API).
func knownEvent(typ string) bool {
	k, ok := store.LookupEvent(typ)
	return ok && k.API == typ
}

func (s *Server) eventHandler() EventHandler {
	if s.EventHandler != nil {
		return s.EventHandler
	}
	return StoreEvent
}

// StoreEvent is the default EventHandler: it applies every event rule and
// stores the event once per device event id (a QoS 1 redelivery is a no-op),
// emitting a store.MessageEvent with the event webhook's data
// (store.IngestEvent). An event its device's settings suppress is
// acknowledged and not stored.
func StoreEvent(tx *store.Tx, dev *store.Device, ev protocol.Event) error {
	_, err := tx.IngestEvent(dev, EventInput(ev))
	return err
}

// EventInput maps a device event on the wire to the store's ingest input.
func EventInput(ev protocol.Event) store.EventInput {
	in := store.EventInput{
		DeviceEventID: ev.ID, Type: ev.Type, Time: time.UnixMilli(ev.Time).UTC(),
		Lat: ev.Lat, Lon: ev.Lon, Alt: ev.Alt, Speed: ev.Speed, Accuracy: ev.Accuracy, Severity: ev.Severity,
		QRCode: ev.QRCode, PinCode: ev.PinCode, GeoFenceID: ev.GeoFenceID, GeoFencePath: ev.GeoFencePath, DriverID: ev.DriverID,
		CameraID: ev.CameraID,
	}
	for _, smp := range ev.Samples {
		in.Samples = append(in.Samples, store.MetadataSample{X: smp.X, Y: smp.Y, Z: smp.Z, Time: smp.Time, Speed: smp.Speed})
	}
	for _, f := range ev.Files {
		in.Files = append(in.Files, store.EventFile{CameraID: f.CameraID, FileID: f.FileID, FileType: f.FileType})
	}
	if ev.SDCard != nil {
		in.SDCard = &store.SDCardInfo{UUID: ev.SDCard.UUID, Manufacturer: ev.SDCard.Manufacturer}
	}
	return in
}
