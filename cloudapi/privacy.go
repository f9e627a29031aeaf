package cloudapi

import (
	"fmt"
	"slices"
	"sync"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Privacy mode. POST /devices/privacy-control switches it on one or many
// devices: a connected device gets the command at once, an offline one gets
// it queued and applies it when it reconnects. What privacy mode keeps
// enabled (its configuration) is set per device with PATCH
// /devices/bulk/privacy-config and per organization with PATCH
// /organizations/{orgId}/privacy-config.

// Privacy mode values of the API: general switches privacy mode on,
// disabled switches it off. on and off are accepted as well.
const (
	apiPrivacyOn  = store.PrivacyModeGeneral
	apiPrivacyOff = store.PrivacyModeDisabled
)

// maxBulkPrivacyIMEIs bounds the imeis list of the privacy calls.
const maxBulkPrivacyIMEIs = 200

func privacyModeFromAPI(v string) (string, bool) {
	switch v {
	case apiPrivacyOn, "on":
		return store.PrivacyModeOn, true
	case apiPrivacyOff, "off":
		return store.PrivacyModeOff, true
	}
	return "", false
}

func privacyModeToAPI(v string) string { return store.PrivacyModeAPIName(v) }

// imeiList is the imeis member of the bodies of the privacy calls on many devices.
type imeiList struct {
	IMEIs []string `json:"imeis"`
}

func (l *imeiList) list() []string { return l.IMEIs }

// decodeIMEIList decodes the body of a privacy call on many devices into
// req and returns its IMEIs, checked.
func decodeIMEIList(c *gin.Context, req interface{ list() []string }) ([]string, error) {
	if err := decode(c, req); err != nil {
		return nil, err
	}
	return checkIMEIList(req.list(), maxBulkPrivacyIMEIs)
}

type privacyControlRequest struct {
	imeiList
	PrivacyMode *string `json:"privacyMode"`
}

// postPrivacyControl handles POST /devices/privacy-control. The switch is
// stored (audited, with a privacyMode system message) before it is sent, so
// the desired configuration carries it as well. An offline device gets the
// command queued in the same transaction; an online device gets it at once
// and, if it does not confirm in time, queued like an offline one.
func (s *Server) postPrivacyControl(c *gin.Context) error {
	var req privacyControlRequest
	imeis, err := decodeIMEIList(c, &req)
	if err != nil {
		return err
	}
	if req.PrivacyMode == nil {
		return badField("privacyMode", "is required (general or disabled)")
	}
	mode, valid := privacyModeFromAPI(*req.PrivacyMode)
	if !valid {
		return badField("privacyMode", "must be general (privacy mode on) or disabled (privacy mode off)")
	}
	online := s.onlineSet(imeis)
	args := protocol.PrivacyModeArgs{Mode: mode}
	res, _, err := s.writeEach(c, s.listedDevices(c, imeis), func(tx *store.Tx, imei string) error {
		if _, err := tx.SetPrivacyMode(imei, mode, !online[imei]); err != nil {
			return err
		}
		if online[imei] || s.commander == nil {
			return nil
		}
		return s.commander.Enqueue(tx, imei, protocol.CmdPrivacyMode, args)
	}, func(changed []string) map[string]bool {
		return s.sendPrivacyMode(c, changed, online, args)
	})
	if err != nil {
		return err
	}
	return ok(c, res)
}

// sendPrivacyMode sends the committed privacy-mode switch to the devices
// that were online, all at once, and reports which confirmed it. One that
// does not confirm gets the command queued for its reconnection. (The
// offline devices got theirs queued with the switch.)
func (s *Server) sendPrivacyMode(c *gin.Context, imeis []string, online map[string]bool, args protocol.PrivacyModeArgs) map[string]bool {
	applied := map[string]bool{}
	if s.commander == nil {
		return applied
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, imei := range imeis {
		if !online[imei] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.commander.Send(c.Request.Context(), imei, protocol.CmdPrivacyMode, args); err == nil {
				mu.Lock()
				applied[imei] = true
				mu.Unlock()
				return
			}
			err := s.update(c, func(tx *store.Tx) error { return s.commander.Enqueue(tx, imei, protocol.CmdPrivacyMode, args) })
			if err != nil {
				// The desired configuration carries the mode as well, so the
				// device still gets it on reconnect.
				s.log.Warn("queue privacy mode", "imei", imei, "err", err)
			}
		}()
	}
	wg.Wait()
	return applied
}

// getPrivacyControl handles GET /devices/{imei}/privacy-control.
func (s *Server) getPrivacyControl(c *gin.Context) error {
	e, _, err := s.pathSettings(c)
	if err != nil {
		return err
	}
	// The reference contract requires privacyMode at the top level as well
	// as in data.
	mode := privacyModeToAPI(e.PrivacyMode)
	return okBody(c, gin.H{"data": gin.H{"privacyMode": mode}, "privacyMode": mode, "requestId": requestID(c)})
}

// privacyConfigDTO is what privacy mode keeps enabled, as enabled or
// disabled per member. In a request a nil member is not named.
type privacyConfigDTO struct {
	GPSTracking         *string `json:"gpsTracking,omitempty"`
	LiveVideo           *string `json:"liveVideo,omitempty"`
	CabinEvents         *string `json:"cabinEvents,omitempty"`
	CabinLensVideo      *string `json:"cabinLensVideo,omitempty"`
	CabinBeepAlerts     *string `json:"cabinBeepAlerts,omitempty"`
	VoiceRecording      *string `json:"voiceRecording,omitempty"`
	RoadAndAuxEvents    *string `json:"roadAndAuxEvents,omitempty"`
	RoadAndAuxLensVideo *string `json:"roadAndAuxLensVideo,omitempty"`
	AccelerationEvents  *string `json:"accelerationEvents,omitempty"`
	GSensorEvents       *string `json:"gSensorEvents,omitempty"`
	VirtualEvent        *string `json:"virtualEvent,omitempty"`
	OtherEvents         *string `json:"otherEvents,omitempty"`
}

func (d *privacyConfigDTO) members(cfg *store.PrivacyModeConfig) []struct {
	name string
	v    **string
	dst  *bool
} {
	return []struct {
		name string
		v    **string
		dst  *bool
	}{
		{"gpsTracking", &d.GPSTracking, &cfg.GPSTracking}, {"liveVideo", &d.LiveVideo, &cfg.LiveVideo},
		{"cabinEvents", &d.CabinEvents, &cfg.CabinEvents}, {"cabinLensVideo", &d.CabinLensVideo, &cfg.CabinLensVideo},
		{"cabinBeepAlerts", &d.CabinBeepAlerts, &cfg.CabinBeepAlerts}, {"voiceRecording", &d.VoiceRecording, &cfg.VoiceRecording},
		{"roadAndAuxEvents", &d.RoadAndAuxEvents, &cfg.RoadAndAuxEvents},
		{"roadAndAuxLensVideo", &d.RoadAndAuxLensVideo, &cfg.RoadAndAuxLensVideo},
		{"accelerationEvents", &d.AccelerationEvents, &cfg.AccelerationEvents},
		{"gSensorEvents", &d.GSensorEvents, &cfg.GSensorEvents}, {"virtualEvent", &d.VirtualEvent, &cfg.VirtualEvent},
		{"otherEvents", &d.OtherEvents, &cfg.OtherEvents},
	}
}

// check validates the named members; field prefixes their names.
func (d *privacyConfigDTO) check(field string) error {
	named := false
	for _, m := range d.members(&store.PrivacyModeConfig{}) {
		if v := *m.v; v != nil {
			named = true
			if !slices.Contains([]string{"enabled", "disabled"}, *v) {
				return badField(field+m.name, "must be enabled or disabled")
			}
		}
	}
	if !named {
		return badRequest("name at least one privacy configuration member")
	}
	return nil
}

// patch returns cfg with the named members changed.
func (d *privacyConfigDTO) patch(cfg store.PrivacyModeConfig) store.PrivacyModeConfig {
	for _, m := range d.members(&cfg) {
		if v := *m.v; v != nil {
			*m.dst = *v == "enabled"
		}
	}
	return cfg
}

func toPrivacyConfigDTO(cfg store.PrivacyModeConfig) privacyConfigDTO {
	var out privacyConfigDTO
	for _, m := range out.members(&cfg) {
		v := "disabled"
		if *m.dst {
			v = "enabled"
		}
		*m.v = &v
	}
	return out
}

// getPrivacyConfig handles GET /devices/{imei}/privacy-config.
func (s *Server) getPrivacyConfig(c *gin.Context) error {
	e, _, err := s.pathSettings(c)
	if err != nil {
		return err
	}
	return ok(c, gin.H{"privacyConfig": toPrivacyConfigDTO(e.PrivacyModeConfig)})
}

type bulkPrivacyConfigRequest struct {
	imeiList
	PrivacyConfig *privacyConfigDTO `json:"privacyConfig"`
}

// patchBulkPrivacyConfig handles PATCH /devices/bulk/privacy-config: the
// named members change on every listed device, the others stay. Connected
// devices get the new configuration now, the others on reconnect.
func (s *Server) patchBulkPrivacyConfig(c *gin.Context) error {
	var req bulkPrivacyConfigRequest
	imeis, err := decodeIMEIList(c, &req)
	if err != nil {
		return err
	}
	if req.PrivacyConfig == nil {
		return badField("privacyConfig", "is required")
	}
	if err := req.PrivacyConfig.check("privacyConfig."); err != nil {
		return err
	}
	online := s.onlineSet(imeis)
	res, _, err := s.writeEach(c, s.listedDevices(c, imeis), func(tx *store.Tx, imei string) error {
		e, err := tx.EffectiveSettings(imei)
		if err != nil {
			return err
		}
		return tx.SetPrivacyModeConfig(imei, req.PrivacyConfig.patch(e.PrivacyModeConfig), !online[imei])
	}, func([]string) map[string]bool { return online })
	if err != nil {
		return err
	}
	return ok(c, res)
}

// getOrgPrivacyConfig handles GET /organizations/{orgId}/privacy-config.
func (s *Server) getOrgPrivacyConfig(c *gin.Context) error {
	os, err := s.orgSettings(c)
	if err != nil {
		return err
	}
	var cfg store.PrivacyModeConfig
	if os.PrivacyModeConfig != nil {
		cfg = *os.PrivacyModeConfig
	}
	return ok(c, toPrivacyConfigDTO(cfg))
}

// patchOrgPrivacyConfig handles PATCH /organizations/{orgId}/privacy-config:
// the named members of the organization's default change. Devices without
// their own privacy configuration follow it; with the organization profile
// enabled the named members change on every device of the organization.
// Connected devices get it at once, offline ones when they reconnect.
func (s *Server) patchOrgPrivacyConfig(c *gin.Context) error {
	var dto privacyConfigDTO
	if err := decode(c, &dto); err != nil {
		return err
	}
	if err := dto.check(""); err != nil {
		return err
	}
	var (
		cfg   store.PrivacyModeConfig
		imeis []string
	)
	// Whether each device is connected is asked before the transaction:
	// the broker is not called while the store is locked for writing.
	var online map[string]bool
	err := s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		imeis, err = tx.OrgIMEIs(o.ID)
		online = s.onlineSet(imeis)
		return err
	})
	if err != nil {
		return err
	}
	err = s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		os, err := tx.OrgSettings(o.ID)
		if err != nil {
			return err
		}
		if os.PrivacyModeConfig != nil {
			cfg = *os.PrivacyModeConfig
		}
		cfg = dto.patch(cfg)
		os.PrivacyModeConfig = &cfg
		if err := tx.PutOrgSettings(os, "organization.privacyConfig"); err != nil {
			return err
		}
		if imeis, err = tx.OrgIMEIs(o.ID); err != nil {
			return err
		}
		for _, imei := range imeis {
			ds, err := tx.DeviceSettings(imei)
			if err != nil {
				return err
			}
			pending := !online[imei]
			switch {
			case o.IsOrganizationProfileEnabled:
				own := cfg
				if ds.PrivacyModeConfig != nil {
					own = dto.patch(*ds.PrivacyModeConfig)
				}
				err = tx.SetPrivacyModeConfig(imei, own, pending)
			case ds.PrivacyModeConfig == nil:
				err = tx.NotifyPrivacyConfig(imei, pending)
			}
			if err != nil {
				return fmt.Errorf("device %s: %w", imei, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.pushConfig(imeis...)
	return ok(c, toPrivacyConfigDTO(cfg))
}
