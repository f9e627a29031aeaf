package cloudapi

import (
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// maxAssociatedIMEIs bounds the imeis of POST /associated-devices.
const maxAssociatedIMEIs = 1000

// associatedDeviceDTO is one device of POST /associated-devices.
type associatedDeviceDTO struct {
	IMEI             string  `json:"imei"`
	AssociatedDevice *string `json:"associatedDevice"`
	DB               *string `json:"db"`
}

// associatedDevices handles POST /associated-devices: the third-party
// device associated with each named device. fleetcam's devices pair with
// no third-party device other than auxiliary cameras (GET
// /devices/{imei}/auxiliary-cameras), so associatedDevice and db are null
// for every device; a device the caller cannot see is 404, naming it.
func (s *Server) associatedDevices(c *gin.Context) error {
	var req struct {
		IMEIs []string `json:"imeis"`
	}
	if err := decode(c, &req); err != nil {
		return err
	}
	imeis, err := checkIMEIList(req.IMEIs, maxAssociatedIMEIs)
	if err != nil {
		return err
	}
	out := make([]associatedDeviceDTO, 0, len(imeis))
	err = s.view(c, func(tx *store.Tx) error {
		for _, imei := range imeis {
			d, err := s.deviceByIMEI(c, tx, imei)
			if err != nil {
				return err
			}
			out = append(out, associatedDeviceDTO{IMEI: d.IMEI})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}
