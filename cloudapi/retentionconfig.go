package cloudapi

import (
	"fmt"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// retentionConfigDTO is a device's SD-card retention per camera, as
// GET and PUT /devices/{imei}/retention-config carry it.
type retentionConfigDTO struct {
	Config []store.CameraRetention `json:"config"`
}

// deviceCameraIDs lists the ids of d's cameras (deviceCameras): road-facing,
// in-cabin and the paired auxiliary cameras.
func deviceCameraIDs(tx *store.Tx, d *store.Device) ([]int, error) {
	cams, err := deviceCameras(tx, d)
	if err != nil {
		return nil, err
	}
	ids := make([]int, len(cams))
	for i, c := range cams {
		ids[i] = c.CameraID
	}
	return ids, nil
}

// getRetentionConfig handles GET /devices/{imei}/retention-config: each
// camera's retention, the device's own or else its organization's
// (store.Retention.DeviceMinutes).
func (s *Server) getRetentionConfig(c *gin.Context) error {
	out := retentionConfigDTO{Config: []store.CameraRetention{}}
	err := s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		cams, err := deviceCameraIDs(tx, d)
		if err != nil {
			return err
		}
		e, err := tx.EffectiveSettings(d.IMEI)
		if err != nil {
			return err
		}
		out.Config = append(out.Config, e.CameraRetentionMinutes(cams)...)
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// retentionItem is one camera of a PUT body, its members required.
type retentionItem struct {
	CameraID         *int `json:"cameraId"`
	RetentionMinutes *int `json:"retentionMinutes"`
}

// putRetentionConfig handles PUT /devices/{imei}/retention-config: config
// replaces the device's own retention per camera ([] gives every camera
// back to the organization's). The change is audited and delivered to the
// device with its configuration.
func (s *Server) putRetentionConfig(c *gin.Context) error {
	var req struct {
		Config *[]retentionItem `json:"config"`
	}
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Config == nil {
		return badField("config", "is required: a list of {cameraId, retentionMinutes} ([] for none)")
	}
	list := make([]store.CameraRetention, 0, len(*req.Config))
	for i, it := range *req.Config {
		switch {
		case it.CameraID == nil:
			return badField(fmt.Sprintf("config[%d].cameraId", i), "is required")
		case it.RetentionMinutes == nil:
			return badField(fmt.Sprintf("config[%d].retentionMinutes", i), "is required")
		}
		list = append(list, store.CameraRetention{CameraID: *it.CameraID, RetentionMinutes: *it.RetentionMinutes})
	}
	err := s.updatePathDevice(c, func(tx *store.Tx, d *store.Device) error { return tx.SetCameraRetention(d.IMEI, list) })
	if err != nil {
		return err
	}
	return okBody(c, gin.H{"requestId": requestID(c)})
}
