package cloudapi

import (
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// Handlers the broker calls, in the transaction that acknowledges a device
// message, to apply the event rules to what devices report. They do no I/O:
// upload requests go out from the media service after the commit.

// DeviceEvent stores an event a device published, after every event rule
// (store.IngestEvent), and wakes the media service when the event has files
// to fetch. It has the shape of the broker's EventHandler.
func (s *Server) DeviceEvent(tx *store.Tx, dev *store.Device, ev protocol.Event) error {
	res, err := tx.IngestEvent(dev, eventInput(ev))
	if err != nil {
		return err
	}
	if res.Dropped != "" {
		s.log.Debug("event dropped", "imei", dev.IMEI, "type", ev.Type, "deviceEventId", ev.ID, "rule", res.Dropped)
	}
	if res.Created && len(res.Event.Files) > 0 {
		tx.OnCommit(s.mediaSvc.wake)
	}
	return nil
}

// eventInput maps a device event on the wire to the store's ingest input.
func eventInput(ev protocol.Event) store.EventInput {
	in := store.EventInput{
		DeviceEventID: ev.ID, Type: ev.Type, Time: time.UnixMilli(ev.Time).UTC(),
		Lat: ev.Lat, Lon: ev.Lon, Alt: ev.Alt, Speed: ev.Speed, Accuracy: ev.Accuracy, Severity: ev.Severity,
		QRCode: ev.QRCode, GeoFenceID: ev.GeoFenceID, GeoFencePath: ev.GeoFencePath, DriverID: ev.DriverID,
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

// DeviceGPS learns from a device's new GPS samples: geofence sides for the
// entered rule, the last position and speedLimit events (store.TrackGPS).
// It has the shape of the broker's GPSHandler.
func (s *Server) DeviceGPS(tx *store.Tx, dev *store.Device, points []store.GPSPoint) error {
	return store.GPSHook(tx, dev, points)
}

// DeviceMediaReady acknowledges a device's report that an upload finished.
// The upload itself (the HTTP PUT to the signed URL) already recorded the
// file, so there is nothing left to store; a report for a file the cloud
// does not have wakes the media service to ask again.
func (s *Server) DeviceMediaReady(tx *store.Tx, dev *store.Device, m protocol.MediaReady) error {
	f, err := tx.MediaFile(store.MediaRef{IMEI: dev.IMEI, CameraID: m.CameraID, FileType: m.FileType, FileID: m.FileID})
	if err != nil || f.State != store.MediaUploaded {
		tx.OnCommit(s.mediaSvc.wake)
	}
	return nil
}
