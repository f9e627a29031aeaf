package cloudapi

import (
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// Hooks for the broker's handlers of device messages. Events and GPS go
// through the store's rules (the broker's default handlers); the API only
// needs to hear about them to fetch media without waiting for its sweep.

// WakeMedia asks the media service to look for files to fetch now; it never
// blocks. Call it after a commit that stored events with files, e.g. with
// tx.OnCommit in the broker's EventHandler.
func (s *Server) WakeMedia() { s.mediaSvc.wake() }

// DeviceMediaReady acknowledges a device's report that an upload finished.
// The upload itself (the HTTP PUT to the signed URL) already recorded the
// file, so there is nothing left to store; a report for a file the cloud
// does not have wakes the media service to ask again. It has the shape of
// the broker's MediaHandler.
func (s *Server) DeviceMediaReady(tx *store.Tx, dev *store.Device, m protocol.MediaReady) error {
	f, err := tx.MediaFile(store.MediaRef{IMEI: dev.IMEI, CameraID: m.CameraID, FileType: m.FileType, FileID: m.FileID})
	if err != nil || f.State != store.MediaUploaded {
		tx.OnCommit(s.mediaSvc.wake)
	}
	return nil
}
