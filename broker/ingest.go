package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

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
		err := s.commitMessage(c, l, job)
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
			// which keeps the message and sends it again on its next
			// connection. A transaction conflict gets here only once it
			// outlasted the wait commitMessage allows it.
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
		if u := st.DataUsage; u != nil {
			if c := deviceTime("dataUsage.periodStart", u.PeriodStart, time.Second); c != none {
				return nil, nil, c
			}
		}
		return s.withDevice(l, func(tx *store.Tx, dev *store.Device) error { return IngestStatus(tx, dev, l.id, st) }), nil, none
	case protocol.TopicGPS:
		var b wireGPSBatch
		if c := decode(pk.Payload, &b); c != none {
			return nil, nil, c
		}
		points := make([]store.GPSPoint, len(b.Samples))
		for i, g := range b.Samples {
			switch {
			case g.Lat == nil:
				return nil, nil, invalid("samples[%d].lat is required", i)
			case g.Lon == nil:
				return nil, nil, invalid("samples[%d].lon is required", i)
			}
			points[i] = store.GPSPoint{Time: time.UnixMilli(g.Time).UTC(), Lat: *g.Lat, Lon: *g.Lon, Alt: g.Alt,
				Speed: g.Speed, Accuracy: g.Accuracy, Heading: g.Heading}
			if err := store.ValidGPSPoint(points[i]); err != nil {
				return nil, nil, invalid("samples[%d]: %s", i, storeReason(err))
			}
		}
		return s.withDevice(l, func(tx *store.Tx, dev *store.Device) error {
			_, err := IngestGPS(tx, dev, points)
			return err
		}), nil, none
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
		}
		if c := deviceTime("time", ev.Time, time.Millisecond); c != none {
			return nil, nil, c
		}
		var stored store.Device
		job := s.withDevice(l, func(tx *store.Tx, dev *store.Device) error {
			stored = *dev
			return IngestEvent(tx, dev, ev)
		})
		return job, func() {
			if s.Notify.Event != nil {
				s.Notify.Event(stored, ev)
			}
		}, none
	case protocol.TopicConfigAck:
		var ack protocol.ConfigAck
		if c := decode(pk.Payload, &ack); c != none {
			return nil, nil, c
		}
		if ack.Version < 0 {
			return nil, nil, invalid("version must not be negative")
		}
		if r := bytes.TrimSpace(ack.Reported); len(r) > 0 && r[0] != '{' && !bytes.Equal(r, jsonNull) {
			return nil, nil, invalid("reported must be a JSON object, the configuration as the device applied it")
		}
		job := s.withDevice(l, func(tx *store.Tx, dev *store.Device) error {
			issued, err := s.desiredVersion(tx, dev)
			if err != nil {
				return err
			}
			return IngestConfigAck(tx, dev, ack, issued)
		})
		return job, func() { s.pushConfigAfterAck(l, ack.Version) }, none
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
		if utf8.RuneCountInString(r.ID) > maxReplyID {
			return nil, nil, invalid("id must be at most %d characters, as the command ids are", maxReplyID)
		}
		sent := ""
		w := s.replies.get(r.ID, l.imei)
		if w != nil {
			sent = w.name
		}
		job := s.withDevice(l, func(tx *store.Tx, dev *store.Device) error { return IngestReply(tx, dev, r, sent) })
		if w != nil && !replyWrites(r, sent) {
			// Nothing of it is stored: the Send waiting for it need not
			// wait for the commit as well (the PUBACK still does).
			s.replied(l.imei, r)
			return job, nil, none
		}
		return job, func() { s.replied(l.imei, r) }, none
	case protocol.TopicMedia:
		var m protocol.MediaReady
		if c := decode(pk.Payload, &m); c != none {
			return nil, nil, c
		}
		if m.FileID == "" {
			return nil, nil, invalid("fileId must name the uploaded file")
		}
		var stored store.Device
		missing := false
		job := s.withDevice(l, func(tx *store.Tx, dev *store.Device) error {
			stored, missing = *dev, IngestMedia(tx, dev, m)
			return nil
		})
		return job, func() {
			if missing && s.Notify.MediaMissing != nil {
				s.Notify.MediaMissing(stored, m)
			}
		}, none
	}
	return nil, nil, packets.Code{Code: packets.ErrTopicNameInvalid.Code, Reason: "unknown topic " + suffix}
}

// wireGPSBatch is a protocol.GPSBatch as it arrives, telling a position left
// out or null from 0,0: a sample without one is refused, not stored at 0,0.
type wireGPSBatch struct {
	Samples []struct {
		protocol.GPSSample
		Lat *float64 `json:"lat"`
		Lon *float64 `json:"lon"`
	} `json:"samples"`
}

// deviceTime refuses a time a device reported in member, as n seconds or
// milliseconds (unit) since the unix epoch, unless it follows
// store.RuleDeviceTime, the rule of every time a device reports.
func deviceTime(member string, n int64, unit time.Duration) packets.Code {
	if _, ok := store.UnixDeviceTime(n, unit); ok {
		return packets.Code{}
	}
	what := "unix seconds"
	if unit == time.Millisecond {
		what = "unix milliseconds"
	}
	return invalid("%s (%s) %s", member, what, store.RuleDeviceTime)
}

// storeReason is the message of a store error ("lat must be from -90 to
// 90", "group 7 not found"), the reason a device is told.
func storeReason(err error) string {
	var se *store.Error
	if errors.As(err, &se) {
		return se.Message()
	}
	return err.Error()
}

// decode unmarshals a JSON payload strictly enough to name what is wrong:
// one JSON value and nothing after it.
func decode(payload []byte, v any) packets.Code {
	if err := json.Unmarshal(payload, v); err != nil {
		return invalid("payload must be a JSON object of the topic's type: %v", err)
	}
	if bytes.Contains(payload, []byte(`\u0000`)) && hasNUL(payload) {
		// No store keeps it in text (PostgreSQL refuses it), so the
		// message could never be stored.
		return invalid("payload must not contain the NUL character (\\u0000) in a string")
	}
	return packets.Code{}
}

// maxReplyID bounds the id of a reply (or its correlation data): a command
// id is an opaque string of at most 64 characters.
const maxReplyID = 64

// jsonNull is the JSON null, which stands for a member left out.
var jsonNull = []byte("null")

// hasNUL reports whether a string or member name of the JSON document
// payload contains the NUL character.
func hasNUL(payload []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(payload))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if s, ok := tok.(string); ok && strings.IndexByte(s, 0) >= 0 {
			return true
		}
	}
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

// knownEvent reports whether typ is an event kind of the catalogue, by its
// API syntax (an alias is accepted and stored under its API name by the API).
func knownEvent(typ string) bool {
	k, ok := store.LookupEvent(typ)
	return ok && k.API == typ
}
