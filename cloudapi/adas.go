package cloudapi

import (
	"fmt"
	"strconv"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// ADAS calibration images are media files of type adas on the road-facing
// camera, with file ids "<type>-<unix seconds>-<n>" (type auto or manual).

// adasImages is the answer of adas-calibration-images.
type adasImages struct {
	// State is available (images listed) or requested (the device was asked).
	State  string   `json:"state"`
	Images []string `json:"images"`
}

// adasCamera is the camera ADAS calibrates: the road-facing one.
const adasCamera = 1

// maxADASRequest bounds one request for images, maxADASListed the images listed.
const (
	maxADASRequest = 9
	maxADASListed  = 10
)

// adasCalibrationImages handles GET /devices/{imei}/adas-calibration-images.
// With max the device is asked to upload up to max images (state
// requested); with calibrationType=auto the latest auto-calibration images
// are listed, fetched from the device first when the cloud has none;
// without either the last 10 uploaded images are listed.
func (s *Server) adasCalibrationImages(c *gin.Context) error {
	q := c.Request.URL.Query()
	ctype := q.Get("calibrationType")
	if q.Has("max") && q.Has("calibrationType") {
		return badRequest("max and calibrationType cannot be used together")
	}
	if q.Has("calibrationType") && ctype != "auto" {
		return badField("calibrationType", "must be auto")
	}
	max := 0
	if q.Has("max") {
		max = maxADASRequest
		if v := q.Get("max"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxADASRequest {
				return badField("max", fmt.Sprintf("must be an integer from 1 to %d", maxADASRequest))
			}
			max = n
		}
	}
	var dev *store.Device
	var images []store.MediaFile
	prefix := ""
	if ctype == "auto" {
		prefix = "auto-"
	}
	list := func() error {
		return s.view(c, func(tx *store.Tx) error {
			var err error
			if dev, err = s.device(c, tx); err != nil {
				return err
			}
			images, err = tx.ADASImages(dev, prefix, maxADASListed)
			return err
		})
	}
	if err := list(); err != nil {
		return err
	}
	switch {
	case max > 0:
		if err := s.requestADASImages(c, dev, "manual", max); err != nil {
			return err
		}
		return ok(c, adasImages{State: "requested", Images: []string{}})
	case ctype == "auto" && len(images) == 0 && s.commander != nil && s.commander.Online(dev.IMEI):
		if err := s.requestADASImages(c, dev, "auto", 1); err != nil {
			return err
		}
		if err := list(); err != nil {
			return err
		}
	}
	out := adasImages{State: "available", Images: []string{}}
	if len(images) == 0 {
		out.State = "requested"
	}
	for _, m := range images {
		u, _ := s.signedURL(mediaPath("files", m.Ref()), s.cfg.Media.LinkTTL)
		out.Images = append(out.Images, u)
	}
	return ok(c, out)
}

// requestADASImages asks the device for n calibration images of
// calibrationType from the road-facing camera, one adasImages command per
// image (the command carries one upload URL per camera), and waits for
// each answer.
func (s *Server) requestADASImages(c *gin.Context, dev *store.Device, calibrationType string, n int) error {
	if s.commander == nil || !s.commander.Online(dev.IMEI) {
		return fmt.Errorf("ADAS images of %s: %w", dev.IMEI, ErrDeviceOffline)
	}
	stamp := strconv.FormatInt(s.now().Unix(), 10)
	var refs []store.MediaRef
	for i := 1; i <= n; i++ {
		refs = append(refs, store.MediaRef{IMEI: dev.IMEI, CameraID: adasCamera, FileType: store.FileADAS,
			FileID: calibrationType + "-" + stamp + "-" + strconv.Itoa(i)})
	}
	err := s.store.Update(c.Request.Context(), store.Actor{Source: "system"}, func(tx *store.Tx) error {
		for _, r := range refs {
			if err := tx.ExpectADASImage(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range refs {
		u, exp := s.uploadURL(r)
		args := protocol.AdasImagesArgs{CalibrationType: calibrationType, URLs: map[int]string{adasCamera: u}, Expires: exp.Unix()}
		if _, err := s.commander.Send(c.Request.Context(), dev.IMEI, protocol.CmdAdasImages, args); err != nil {
			return commandFailed("upload ADAS calibration images", err)
		}
	}
	return nil
}

// deleteADASImages handles DELETE (and GET) /devices/{imei}/adas-delete-calibration-images:
// the device deletes its calibration images and the cloud drops its copies.
// New images are taken the next time the vehicle drives above 75 km/h.
func (s *Server) deleteADASImages(c *gin.Context) error {
	var dev *store.Device
	if err := s.view(c, func(tx *store.Tx) error { var err error; dev, err = s.device(c, tx); return err }); err != nil {
		return err
	}
	if s.commander == nil || !s.commander.Online(dev.IMEI) {
		return fmt.Errorf("ADAS images of %s: %w", dev.IMEI, ErrDeviceOffline)
	}
	if _, err := s.commander.Send(c.Request.Context(), dev.IMEI, protocol.CmdAdasDeleteImages, nil); err != nil {
		return commandFailed("delete its ADAS calibration images", err)
	}
	var n int
	err := s.update(c, func(tx *store.Tx) error {
		var err error
		n, err = tx.DeleteADASImages(dev)
		tx.OnCommit(s.mediaSvc.wake)
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, gin.H{"deleted": n})
}
