package cloudapi

import (
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// The Wi-Fi hotspot of AI-12 dashcams. It is switched on and off with PUT
// /devices/{imei}/hotspot (or the hotSpot.hotspotEnabled parameter of the
// device configuration); each switch from Off to On draws a new password,
// which the organization reads with GET /devices/{imei}/hotspot or, for many
// devices, POST /devices/wifi-password, and hands to its drivers. The
// password reaches the device inside its desired configuration.

// hotspotDTO is a device's hotspot.
type hotspotDTO struct {
	IMEI           string `json:"imei"`
	HotspotEnabled bool   `json:"hotspotEnabled"`
	InternetAccess bool   `json:"internetAccess"`
	// Password is the Wi-Fi password; DefaultPassword says it is the fixed
	// factory default (never switched on since the last factory reset).
	Password          string `json:"password"`
	DefaultPassword   bool   `json:"defaultPassword"`
	PasswordChangedAt string `json:"passwordChangedAt,omitempty"`
}

func toHotspotDTO(imei string, cfg store.DeviceConfig, h *store.HotspotState) hotspotDTO {
	return hotspotDTO{IMEI: imei, HotspotEnabled: cfg.HotspotEnabled, InternetAccess: cfg.InternetAccess,
		Password: h.CurrentPassword(), DefaultPassword: h.Password == "", PasswordChangedAt: isoTime(h.PasswordChangedAt)}
}

// readHotspot returns the hotspot of a device the caller may see.
func readHotspot(tx *store.Tx, imei string) (hotspotDTO, error) {
	e, err := tx.EffectiveSettings(imei)
	if err != nil {
		return hotspotDTO{}, err
	}
	h, err := tx.Hotspot(imei)
	if err != nil {
		return hotspotDTO{}, err
	}
	return toHotspotDTO(imei, e.Device, h), nil
}

// secrets refuses viewers: hotspot passwords are credentials, handed out by
// those who may change the device.
func (s *Server) secrets(c *gin.Context) {
	if principal(c).AccessLevel == store.AccessViewer {
		s.fail(c, forbidden("the viewer access level cannot read hotspot passwords"))
		return
	}
	c.Next()
}

// getHotspot handles GET /devices/{imei}/hotspot.
func (s *Server) getHotspot(c *gin.Context) error {
	var out hotspotDTO
	err := s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		out, err = readHotspot(tx, d.IMEI)
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

type hotspotRequest struct {
	HotspotEnabled *bool `json:"hotspotEnabled"`
	InternetAccess *bool `json:"internetAccess"`
}

// putHotspot handles PUT /devices/{imei}/hotspot: it switches the hotspot
// (and optionally internet access over Wi-Fi) and answers the hotspot with
// its password. The rest of the device configuration stays as the device
// runs it.
func (s *Server) putHotspot(c *gin.Context) error {
	var req hotspotRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.HotspotEnabled == nil {
		return badField("hotspotEnabled", "is required")
	}
	var out hotspotDTO
	err := s.update(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		e, err := tx.EffectiveSettings(d.IMEI)
		if err != nil {
			return err
		}
		ds, err := tx.DeviceSettings(d.IMEI)
		if err != nil {
			return err
		}
		cfg := e.Device
		cfg.HotspotEnabled = *req.HotspotEnabled
		if req.InternetAccess != nil {
			cfg.InternetAccess = *req.InternetAccess
		}
		ds.Device = &cfg
		if err := tx.PutDeviceSettings(ds, "device.hotspot"); err != nil {
			return err
		}
		out, err = readHotspot(tx, d.IMEI)
		return err
	})
	if err != nil {
		return err
	}
	s.pushConfig(out.IMEI)
	return ok(c, out)
}

// maxWifiPasswordIMEIs bounds the imeis list of POST /devices/wifi-password.
const maxWifiPasswordIMEIs = 100

type wifiPasswordRequest struct {
	IMEIs []string `json:"imeis"`
}

// wifiPasswordResult answers POST /devices/wifi-password per IMEI.
type wifiPasswordResult struct {
	Devices  []hotspotDTO   `json:"devices"`
	Rejected []rejectedIMEI `json:"rejected"`
}

// postWifiPassword handles POST /devices/wifi-password: the hotspot
// passwords of up to 100 devices.
func (s *Server) postWifiPassword(c *gin.Context) error {
	var req wifiPasswordRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	imeis, err := checkIMEIList(req.IMEIs, maxWifiPasswordIMEIs)
	if err != nil {
		return err
	}
	out := wifiPasswordResult{Devices: []hotspotDTO{}}
	err = s.view(c, func(tx *store.Tx) error {
		res := newBulkResult()
		devices := s.visibleDevices(c, tx, imeis, &res)
		out.Rejected = res.Rejected
		for _, d := range devices {
			h, err := readHotspot(tx, d.IMEI)
			if err != nil {
				return err
			}
			out.Devices = append(out.Devices, h)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}
