package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// What each device message writes. There is one function per message type,
// run in the transaction that acknowledges the message; the broker calls
// them and so do tests that feed a store as devices would. Only what
// happens after the commit is pluggable (Notifiers).

// Notifiers are told about device messages once they are committed. They
// run in the publishing device's read loop, so they must not block: hand
// the work to a channel or a goroutine. A nil member is not called.
type Notifiers struct {
	// Event follows a committed event message, stored or not (a
	// redelivery, an event the device's settings suppress).
	Event func(dev store.Device, ev protocol.Event)
	// MediaMissing follows a device's report of a finished upload whose
	// file the cloud does not hold as uploaded.
	MediaMissing func(dev store.Device, m protocol.MediaReady)
}

// IngestEvent stores an event of dev: a power on or off opens or closes
// its trip (store.Tx.ApplyTripEvent); a driver event goes through the
// driver state machine, which records the events it decides on
// (store.Tx.ApplyDriverEvent, store.Tx.RecordDriverEvents); any other
// event goes through every event rule and is stored once per device event
// id, with its webhook message (store.Tx.IngestEvent). A QoS 1 redelivery
// changes nothing, and an event its device's settings suppress is not stored.
func IngestEvent(tx *store.Tx, dev *store.Device, ev protocol.Event) error {
	in := eventInput(ev)
	if err := tx.ApplyTripEvent(dev, in); err != nil {
		return err
	}
	if store.IsDriverEvent(ev.Type) {
		ts, err := tx.ApplyDriverEvent(dev, in)
		if err != nil {
			return err
		}
		return tx.RecordDriverEvents(dev, ts, in)
	}
	_, err := tx.IngestEvent(dev, in)
	return err
}

// eventInput maps a device event on the wire to the store's ingest input.
func eventInput(ev protocol.Event) store.EventInput {
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

// IngestGPS stores a GPS batch of dev and returns the samples that were
// new (a redelivered batch yields none). The new samples become a GPS
// webhook message and teach the store the device's geofence sides and
// speed-limit excursions (store.Tx.TrackGPS). An organization none of whose
// URLs receives GPS webhooks gets no message: GPS is most of what devices
// send, and a message no URL receives would only be written, read and dropped.
// While the device's privacy turns GPS off (store.GPSAllowed) nothing of
// the batch is stored: it is acknowledged and dropped, so that the device
// does not send it again (docs/device-protocol.md, section 5.1).
func IngestGPS(tx *store.Tx, dev *store.Device, points []store.GPSPoint) ([]store.GPSPoint, error) {
	if len(points) == 0 {
		return nil, nil
	}
	if takes, err := tx.TakesGPS(dev); err != nil || !takes {
		return nil, err
	}
	added, err := tx.AddGPS(dev, points)
	if err != nil || len(added) == 0 {
		return added, err
	}
	if tx.HasWebhookReceivers(dev.OrganizationID, store.WebhookTypeGPS) {
		if err := tx.Emit(store.Message{Kind: store.MessageGPS, OrganizationID: dev.OrganizationID,
			PartnerID: dev.PartnerID, IMEI: dev.IMEI, GPS: added}); err != nil {
			return nil, err
		}
	}
	if _, err := tx.TrackGPS(dev, added); err != nil {
		return nil, err
	}
	return added, nil
}

// IngestStatus stores a status report of dev that arrived on connection
// conn: presence (only when conn is the device's current connection, with
// a deviceStatus message when it changed), firmware, product type and
// health, and what the store derives from them (store.Tx.ApplyStatusReport:
// health alarms, auxiliary cameras, data usage).
func IngestStatus(tx *store.Tx, dev *store.Device, conn string, st protocol.Status) error {
	dl, err := tx.DeviceLink(dev.IMEI)
	if err != nil {
		return err
	}
	prev := dl.Presence
	if dl.ConnectionID == conn {
		dl.Presence = store.PresenceOnline
		if st.State == store.PresenceStandby {
			dl.Presence = store.PresenceStandby
		}
	}
	dl.Firmware, dl.ProductType, dl.Health = st.Firmware, st.ProductType, healthOf(st, tx.Now())
	if err := tx.PutDeviceLink(dl); err != nil {
		return err
	}
	if err := emitPresence(tx, dev, prev, dl.Presence); err != nil {
		return err
	}
	if st.ProductType != "" && st.ProductType != dev.ProductType {
		dev.ProductType = st.ProductType
		if err := tx.UpdateDevice(dev, "device.productType.report"); err != nil {
			return err
		}
	}
	_, err = tx.ApplyStatusReport(dev, *dl.Health)
	return err
}

// healthOf maps a status report from the wire to the device health the
// store records, as reported at now.
func healthOf(st protocol.Status, now time.Time) *store.DeviceHealth {
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

// IngestConfigAck records the configuration version dev acknowledged and
// the configuration it reports. issued is the version of the desired
// configuration dev is sent now: an acknowledgement of a later version,
// which the cloud never issued, is refused and changes nothing, since it
// would stop the delivery of every version up to it. A stored
// acknowledgement above issued (recorded before acknowledgements were
// checked) gives way to the new one.
func IngestConfigAck(tx *store.Tx, dev *store.Device, ack protocol.ConfigAck, issued int64) error {
	if ack.Version > issued {
		return store.Invalid("version", "%d was never issued: the latest configuration version is %d", ack.Version, issued)
	}
	dl, err := tx.DeviceLink(dev.IMEI)
	if err != nil {
		return err
	}
	if dl.AckedConfigVersion > issued {
		dl.AckedConfigVersion = ack.Version
	}
	dl.AckedConfigVersion = max(dl.AckedConfigVersion, ack.Version)
	dl.ConfigAckedAt = tx.Now()
	if len(ack.Reported) > 0 && !bytes.Equal(ack.Reported, jsonNull) {
		dl.ReportedConfig = append(json.RawMessage(nil), ack.Reported...)
	}
	return tx.PutDeviceLink(dl)
}

// IngestReply stores what a reply of dev settles: a queued command is done
// once answered, a confirmed queued privacy switch records its "applied"
// message, and a successful factory reset revokes the device's token so
// that it must bootstrap again. sent names the command a caller is waiting
// for under the reply's id, if any (a command sent, not queued).
func IngestReply(tx *store.Tx, dev *store.Device, r protocol.Reply, sent string) error {
	name := sent
	qc, err := tx.QueuedCommand(dev.IMEI, r.ID)
	if err == nil {
		name = qc.Name
		if _, err := tx.DeleteQueuedCommand(dev.IMEI, r.ID); err != nil {
			return err
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	} else {
		qc = nil
	}
	if !r.OK {
		return nil
	}
	switch name {
	case protocol.CmdFactoryReset:
		if err := tx.RevokeDeviceToken(dev.IMEI, "factory reset"); err != nil {
			return err
		}
		return tx.ResetHotspot(dev.IMEI)
	case protocol.CmdPrivacyMode:
		if qc != nil {
			return privacyApplied(tx, dev.IMEI, qc.Args)
		}
	}
	return nil
}

// replyWrites reports whether IngestReply stores anything for a reply to
// an immediate command named sent (one Send is waiting for, which is never
// a queued one): only a factory reset's success does.
func replyWrites(r protocol.Reply, sent string) bool {
	return r.OK && sent == protocol.CmdFactoryReset
}

// privacyApplied records a queued privacy switch that the device confirmed
// after reconnecting.
func privacyApplied(tx *store.Tx, imei string, args json.RawMessage) error {
	var a protocol.PrivacyModeArgs
	if err := json.Unmarshal(args, &a); err != nil || a.Mode == "" {
		return nil
	}
	before := store.PrivacyModeOn
	if a.Mode == store.PrivacyModeOn {
		before = store.PrivacyModeOff
	}
	return tx.PrivacyModeApplied(imei, before, a.Mode)
}

// IngestMedia acknowledges dev's report that an upload finished. The
// upload itself (the HTTP PUT to the signed URL) already recorded the
// file, so nothing is written; it reports whether the cloud lacks the file
// as uploaded, so that the media service asks for it again.
func IngestMedia(tx *store.Tx, dev *store.Device, m protocol.MediaReady) (missing bool) {
	f, err := tx.MediaFile(store.MediaRef{IMEI: dev.IMEI, CameraID: m.CameraID, FileType: m.FileType, FileID: m.FileID})
	return err != nil || f.State != store.MediaUploaded
}
