package cloudapi

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Auxiliary cameras (ids 50 and above) are paired and unpaired by the
// dashcam on a partner's request; the device must be online. The result is
// also sent as a system message (auxiliaryCamerasPairingStatus) to the webhooks.

// auxCameraDTO is an auxiliary camera known for a device.
type auxCameraDTO struct {
	CameraID     int    `json:"cameraId,omitempty"`
	SSID         string `json:"ssid,omitempty"`
	SerialNumber string `json:"serialNumber,omitempty"`
	Kind         string `json:"kind,omitempty"`
	Paired       bool   `json:"paired"`
	Connected    bool   `json:"connected"`
	PairedAt     string `json:"pairedAt,omitempty"`
}

func toAuxCameraDTO(c store.AuxCamera) auxCameraDTO {
	return auxCameraDTO{CameraID: c.CameraID, SSID: c.SSID, SerialNumber: c.SerialNumber, Kind: c.Kind, Paired: c.Paired,
		Connected: c.Connected, PairedAt: isoTime(c.PairedAt)}
}

// maxAuxCameras bounds the cameras of one pairing call and one search.
const maxAuxCameras = 8

// auxDevice resolves the path device for an auxiliary camera call.
func (s *Server) auxDevice(c *gin.Context) (*store.Device, error) {
	var dev *store.Device
	err := s.view(c, func(tx *store.Tx) error {
		var err error
		dev, err = s.device(c, tx)
		return err
	})
	return dev, err
}

// sendAux sends an auxiliary camera command and decodes its result.
func (s *Server) sendAux(c *gin.Context, imei, name string, args, result any) error {
	if s.commander == nil {
		return ErrDeviceOffline
	}
	raw, err := s.commander.Send(c.Request.Context(), imei, name, args)
	if err != nil {
		return err
	}
	if result == nil || len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return fmt.Errorf("cloudapi: device %s answered %s with a malformed result: %w", imei, name, err)
	}
	return nil
}

func fromInfo(in []protocol.AuxCameraInfo) []store.AuxCamera {
	out := []store.AuxCamera{}
	for _, c := range in {
		out = append(out, store.AuxCamera{CameraID: c.CameraID, SSID: c.SSID, SerialNumber: c.SerialNumber, Kind: c.Kind})
	}
	return out
}

// listAuxCameras handles GET /devices/{imei}/auxiliary-cameras: the cameras paired or reported.
func (s *Server) listAuxCameras(c *gin.Context) error {
	out := []auxCameraDTO{}
	err := s.view(c, func(tx *store.Tx) error {
		dev, err := s.device(c, tx)
		if err != nil {
			return err
		}
		cams, err := tx.AuxCameras(dev.IMEI)
		for _, cam := range cams {
			out = append(out, toAuxCameraDTO(cam))
		}
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// searchAuxCameras handles GET /devices/{imei}/auxiliary-cameras/search:
// the device looks for cameras in range (limit 1 to 8, default 4).
func (s *Server) searchAuxCameras(c *gin.Context) error {
	limit := 4
	if v, has := c.GetQuery("limit"); has {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxAuxCameras {
			return badField("limit", fmt.Sprintf("must be an integer from 1 to %d", maxAuxCameras))
		}
		limit = n
	}
	dev, err := s.auxDevice(c)
	if err != nil {
		return err
	}
	var res protocol.AuxCamerasResult
	if err := s.sendAux(c, dev.IMEI, protocol.CmdAuxSearch, protocol.AuxSearchArgs{Limit: limit}, &res); err != nil {
		return err
	}
	found := fromInfo(res.Cameras)
	if len(found) > limit {
		found = found[:limit]
	}
	if err := s.update(c, func(tx *store.Tx) error { return tx.RecordAuxSearch(dev, found) }); err != nil {
		return err
	}
	out := []auxCameraDTO{}
	for _, cam := range found {
		out = append(out, toAuxCameraDTO(cam))
	}
	return ok(c, gin.H{"auxiliaryCameras": out})
}

// auxCamerasBody is the body of the pair and unpair calls.
type auxCamerasBody struct {
	AuxiliaryCameras []struct {
		SSID         string `json:"ssid"`
		SerialNumber string `json:"serialNumber"`
		CameraID     int    `json:"cameraId"`
	} `json:"auxiliaryCameras"`
}

func decodeAuxCameras(c *gin.Context) (auxCamerasBody, error) {
	var body auxCamerasBody
	if err := decode(c, &body); err != nil {
		return body, err
	}
	if n := len(body.AuxiliaryCameras); n == 0 || n > maxAuxCameras {
		return body, badField("auxiliaryCameras", fmt.Sprintf("must hold from 1 to %d cameras", maxAuxCameras))
	}
	return body, nil
}

// pairAuxCameras handles POST /devices/{imei}/auxiliary-cameras/pair.
func (s *Server) pairAuxCameras(c *gin.Context) error {
	body, err := decodeAuxCameras(c)
	if err != nil {
		return err
	}
	var ssids []string
	for i, cam := range body.AuxiliaryCameras {
		if cam.SSID == "" || cam.SerialNumber != "" || cam.CameraID != 0 {
			return badField(fmt.Sprintf("auxiliaryCameras[%d].ssid", i), "is required, and is the only member when pairing")
		}
		ssids = append(ssids, cam.SSID)
	}
	dev, err := s.auxDevice(c)
	if err != nil {
		return err
	}
	var res protocol.AuxCamerasResult
	if err := s.sendAux(c, dev.IMEI, protocol.CmdAuxPair, protocol.AuxPairArgs{SSIDs: ssids}, &res); err != nil {
		return err
	}
	paired := fromInfo(res.Cameras)
	if err := s.update(c, func(tx *store.Tx) error { return tx.RecordAuxPairing(dev, paired) }); err != nil {
		return err
	}
	out := []auxCameraDTO{}
	for _, cam := range paired {
		cam.Paired = true
		out = append(out, toAuxCameraDTO(cam))
	}
	return ok(c, gin.H{"auxiliaryCameras": out})
}

// unpairAuxCameras handles POST /devices/{imei}/auxiliary-cameras/unpair:
// cameras are named by serial number or camera id.
func (s *Server) unpairAuxCameras(c *gin.Context) error {
	body, err := decodeAuxCameras(c)
	if err != nil {
		return err
	}
	var dev *store.Device
	var ids []int
	err = s.view(c, func(tx *store.Tx) error {
		if dev, err = s.device(c, tx); err != nil {
			return err
		}
		known, err := tx.AuxCameras(dev.IMEI)
		if err != nil {
			return err
		}
		for i, want := range body.AuxiliaryCameras {
			field := fmt.Sprintf("auxiliaryCameras[%d]", i)
			if (want.SerialNumber == "") == (want.CameraID == 0) || want.SSID != "" {
				return badField(field, "must name the camera by serialNumber or by cameraId")
			}
			found := false
			for _, k := range known {
				if want.CameraID != 0 && k.CameraID == want.CameraID || want.SerialNumber != "" && k.SerialNumber == want.SerialNumber {
					ids, found = append(ids, k.CameraID), true
					break
				}
			}
			if !found {
				name := want.SerialNumber
				if name == "" {
					name = "id " + strconv.Itoa(want.CameraID)
				}
				return notFound(fmt.Sprintf("%s: auxiliary camera %s of device %s", field, name, dev.IMEI))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.sendAux(c, dev.IMEI, protocol.CmdAuxUnpair, protocol.AuxUnpairArgs{CameraIDs: ids}, nil); err != nil {
		return err
	}
	if err := s.update(c, func(tx *store.Tx) error { return tx.RecordAuxUnpairing(dev, ids) }); err != nil {
		return err
	}
	return ok(c, gin.H{"unpaired": ids})
}
