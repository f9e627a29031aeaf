package cloudapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// A device's cameras: the road-facing lens (1), the in-cab lens (2) and the
// paired auxiliary cameras (50 and above), their names, and a live
// snapshot of one of them.

// Built-in camera ids and the first auxiliary camera id.
const (
	cameraRoad     = 1
	cameraCabin    = 2
	firstAuxCamera = 50
)

// cameraDTO is one camera of GET /devices/{imei}/cameras.
type cameraDTO struct {
	CameraID int    `json:"cameraId"`
	Name     string `json:"name,omitempty"`
}

// deviceCameras returns the cameras of d: the two lenses and the paired
// auxiliary cameras, with the names set for them.
func deviceCameras(tx *store.Tx, d *store.Device) ([]cameraDTO, error) {
	aux, err := tx.AuxCameras(d.IMEI)
	if err != nil {
		return nil, err
	}
	e, err := tx.EffectiveSettings(d.IMEI)
	if err != nil {
		return nil, err
	}
	out := []cameraDTO{{CameraID: cameraRoad}, {CameraID: cameraCabin}}
	for _, a := range aux {
		if a.Paired {
			out = append(out, cameraDTO{CameraID: a.CameraID, Name: e.Control.CameraNames[a.CameraID]})
		}
	}
	return out, nil
}

// getCameras handles GET /devices/{imei}/cameras: the views a live stream
// can show. The device must be online (417), as the contract says.
func (s *Server) getCameras(c *gin.Context) error {
	var cams []cameraDTO
	err := s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		if !s.online(d.IMEI) {
			return ErrDeviceOffline
		}
		cams, err = deviceCameras(tx, d)
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, cams)
}

// cameraNameDTO is one member of the PATCH /devices/{imei}/cameras body; a
// null name removes the camera's name.
type cameraNameDTO struct {
	CameraID *int            `json:"cameraId"`
	Name     json.RawMessage `json:"name" nullable:"true"`
}

// name returns the name given (nil for null) or a 400 naming field.
func (r cameraNameDTO) name(field string) (*string, error) {
	if len(r.Name) == 0 {
		return nil, badField(field, "is required: the camera's name, or null to remove it")
	}
	var v *string
	if err := json.Unmarshal(r.Name, &v); err != nil {
		return nil, badField(field, "must be a string or null")
	}
	if v != nil && (*v == "" || len([]rune(*v)) > protocol.MaxCameraName) {
		return nil, badField(field, fmt.Sprintf("must have 1 to %d characters, or be null to remove the name", protocol.MaxCameraName))
	}
	return v, nil
}

// maxCameraNames bounds one PATCH /devices/{imei}/cameras.
const maxCameraNames = 10

// patchCameras handles PATCH /devices/{imei}/cameras: names (or with null
// unnames) paired auxiliary cameras; cameras not named in the call keep
// their names. The names go to the device with its configuration. The
// answer lists the paired auxiliary cameras with their names.
func (s *Server) patchCameras(c *gin.Context) error {
	var req []cameraNameDTO
	if err := decode(c, &req); err != nil {
		return err
	}
	if err := checkCameraNames(req); err != nil {
		return err
	}
	var cams []cameraDTO
	err := s.updatePathDevice(c, func(tx *store.Tx, d *store.Device) error {
		aux, err := tx.AuxCameras(d.IMEI)
		if err != nil {
			return err
		}
		err = updateControl(tx, d.IMEI, "device.cameraNames", func(ctl *store.DeviceControl, _ int64) error {
			names := maps.Clone(ctl.CameraNames)
			if names == nil {
				names = map[int]string{}
			}
			for i, r := range req {
				if !slices.ContainsFunc(aux, func(a store.AuxCamera) bool { return a.Paired && a.CameraID == *r.CameraID }) {
					return badField(fmt.Sprintf("[%d].cameraId", i), fmt.Sprintf("names camera %d, which is not paired with device %s", *r.CameraID, d.IMEI))
				}
				if name, _ := r.name(""); name == nil {
					delete(names, *r.CameraID)
				} else {
					names[*r.CameraID] = *name
				}
			}
			ctl.CameraNames = names
			if len(names) == 0 {
				ctl.CameraNames = nil
			}
			return nil
		})
		if err != nil {
			return err
		}
		all, err := deviceCameras(tx, d)
		for _, cam := range all {
			if cam.CameraID >= firstAuxCamera {
				cams = append(cams, cam)
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	if cams == nil {
		cams = []cameraDTO{}
	}
	return ok(c, cams)
}

// checkCameraNames checks the body of PATCH /devices/{imei}/cameras.
func checkCameraNames(req []cameraNameDTO) error {
	if len(req) == 0 || len(req) > maxCameraNames {
		return badRequest("the body must list from 1 to %d cameras", maxCameraNames)
	}
	seen := map[int]bool{}
	for i, r := range req {
		field := fmt.Sprintf("[%d]", i)
		switch {
		case r.CameraID == nil:
			return badField(field+".cameraId", "is required")
		case *r.CameraID < firstAuxCamera:
			return badField(field+".cameraId", "must be an auxiliary camera (50 and above): only auxiliary cameras have names")
		case seen[*r.CameraID]:
			return badField(field+".cameraId", fmt.Sprintf("names camera %d twice", *r.CameraID))
		}
		if _, err := r.name(field + ".name"); err != nil {
			return err
		}
		seen[*r.CameraID] = true
	}
	return nil
}

// snapshotMetadata tells when the snapshot was taken.
type snapshotMetadata struct {
	Time string `json:"time"`
}

// snapshotBody is the answer of the snapshot call: the link in data.
type snapshotBody struct {
	Data      string           `json:"data"`
	Metadata  snapshotMetadata `json:"metadata"`
	RequestID string           `json:"requestId"`
}

// cameraSnapshot handles GET /devices/{imei}/cameras/{cameraId}/snapshot:
// the device takes a snapshot of one camera at time (now by default) with
// the clip command and uploads the JPEG to a signed URL; the answer is a
// signed link to it, which serves the picture once the upload landed. The
// device must be online (417). The answer is one link, so one camera per
// call: cameraId 0 (all cameras) is refused. A second that the device
// holds no recording of is 404 NoRecordingAvailableError.
func (s *Server) cameraSnapshot(c *gin.Context) error {
	cam, err := strconv.Atoi(c.Param("cameraId"))
	switch {
	case err != nil || cam < 0:
		return badField("cameraId", "must be 1 (road-facing), 2 (in-cab) or an auxiliary camera (50 and above)")
	case cam == 0 || c.Query("cameraIds") != "":
		return badField("cameraId", "must name one camera: the answer is one link, so cameraId 0 and cameraIds are not supported")
	}
	at := s.now()
	if v := c.Query("time"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil || t.After(at) {
			return badField("time", "must be an ISO 8601 time, not in the future")
		}
		at = t
	}
	at = at.Truncate(time.Second)
	var d *store.Device
	err = s.view(c, func(tx *store.Tx) error {
		if d, err = s.device(c, tx); err != nil {
			return err
		}
		cams, err := deviceCameras(tx, d)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(cams, func(x cameraDTO) bool { return x.CameraID == cam }) {
			return badField("cameraId", fmt.Sprintf("camera %d is not a camera of device %s", cam, d.IMEI))
		}
		return nil
	})
	if err != nil {
		return err
	}
	ref := store.MediaRef{IMEI: d.IMEI, CameraID: cam, FileType: store.FileSnapshot, FileID: strconv.FormatInt(at.Unix(), 10)}
	if err := s.takeSnapshot(c, d, ref, at); err != nil {
		return err
	}
	link, _ := s.signedURL(mediaPath("files", ref), s.cfg.Media.LinkTTL)
	return okBody(c, snapshotBody{Data: link, Metadata: snapshotMetadata{Time: isoTime(at)}, RequestID: requestID(c)})
}

// takeSnapshot asks the device for the snapshot file ref of second at,
// unless the cloud holds it already (a file is written once).
func (s *Server) takeSnapshot(c *gin.Context, d *store.Device, ref store.MediaRef, at time.Time) error {
	if !s.online(d.IMEI) {
		return ErrDeviceOffline
	}
	var stored bool
	s.view(c, func(tx *store.Tx) error {
		m, err := tx.MediaFile(ref)
		stored = err == nil && m.State == store.MediaUploaded
		return nil
	})
	if stored {
		return nil
	}
	u, exp := s.uploadURL(ref)
	args := protocol.ClipArgs{Time: at.Unix(), CameraID: ref.CameraID, MediaType: store.FileSnapshot,
		FileID: ref.FileID, URL: u, Expires: exp.Unix()}
	raw, err := s.commander.Send(c.Request.Context(), d.IMEI, protocol.CmdClip, args)
	if err != nil {
		return err
	}
	var res protocol.ClipResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("cloudapi: clip reply of %s: %w", d.IMEI, err)
	}
	if !res.Available {
		return apiErr(http.StatusNotFound, NameNoRecordingAvailable, "device %s holds no recording of camera %d at %s",
			d.IMEI, ref.CameraID, isoTime(at))
	}
	return nil
}
