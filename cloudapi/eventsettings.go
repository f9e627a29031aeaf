package cloudapi

import (
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Handlers of the event configuration calls; eventconfig.go holds the body
// and its rules.

// getEventConfig handles GET /devices/{imei}/event-config: the enabled
// events of the configuration the device runs, defaults filled in.
func (s *Server) getEventConfig(c *gin.Context) error {
	e, ds, err := s.pathSettings(c)
	if err != nil {
		return err
	}
	return okConfig(c, toEventConfigDTO(e.Events, e.Device.AudioAlarms), s.configMetadata(c, ds.IMEI, ds.UpdatedAt))
}

func putEventConfig(tx *store.Tx, imei string, cfg store.EventConfig) error {
	ds, err := tx.DeviceSettings(imei)
	if err != nil {
		return err
	}
	c := cfg.Clone()
	ds.Events = &c
	return tx.PutDeviceSettings(ds, "device.events")
}

// putDeviceEventConfig handles PUT /devices/{imei}/event-config: the
// device's event configuration is replaced; event types not listed are disabled.
func (s *Server) putDeviceEventConfig(c *gin.Context) error {
	cfg, err := decodeReplacedEvents(c)
	if err != nil {
		return err
	}
	var audioAlarms bool
	res, err := s.writeDevices(c, s.pathDevice(c), func(tx *store.Tx, imei string) error {
		if err := putEventConfig(tx, imei, cfg); err != nil {
			return err
		}
		e, err := tx.EffectiveSettings(imei)
		audioAlarms = err == nil && e.Device.AudioAlarms
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, eventConfigResult{bulkWriteResult: res, Config: toEventConfigDTO(cfg, audioAlarms)})
}

// decodeReplacedEvents decodes an event configuration body that replaces
// the current one: event types not listed are disabled.
func decodeReplacedEvents(c *gin.Context) (store.EventConfig, error) {
	var dto eventConfigDTO
	if err := decode(c, &dto); err != nil {
		return store.EventConfig{}, err
	}
	return dto.replacedEvents()
}

// eventConfigResult answers an event-config write on one device.
type eventConfigResult struct {
	bulkWriteResult
	Config eventConfigDTO `json:"config"`
}

// putDevicesEventConfig handles PUT /devices/event-config: the same
// replacing event configuration on many devices; the answer is per IMEI.
func (s *Server) putDevicesEventConfig(c *gin.Context) error {
	t, dto, err := decodeBulkConfig[eventConfigDTO](c)
	if err != nil {
		return err
	}
	cfg, err := dto.replacedEvents()
	if err != nil {
		return prefixField(err, "config.")
	}
	res, err := s.writeDevices(c, s.targetDevices(c, t), func(tx *store.Tx, imei string) error {
		return putEventConfig(tx, imei, cfg)
	})
	if err != nil {
		return err
	}
	return ok(c, res)
}

// orgEventConfig returns an organization's event configuration and the
// audioAlarms switch of its device configuration.
func orgEventConfig(os *store.OrgSettings) (store.EventConfig, bool) {
	cfg := store.DefaultEventConfig()
	if os.Events != nil {
		cfg = os.Events.Clone()
	}
	dev, _ := orgDeviceConfig(os)
	return cfg, dev.AudioAlarms
}

// getOrgEventSettings handles GET /organizations/{orgId}/event-settings.
func (s *Server) getOrgEventSettings(c *gin.Context) error {
	os, err := s.orgSettings(c)
	if err != nil {
		return err
	}
	return ok(c, toEventConfigDTO(orgEventConfig(os)))
}

// postOrgEventSettings handles POST /organizations/{orgId}/event-settings:
// the organization's event settings are replaced. With the organization
// profile enabled the event settings of every device of the organization
// are replaced by them too.
func (s *Server) postOrgEventSettings(c *gin.Context) error {
	cfg, err := decodeReplacedEvents(c)
	if err != nil {
		return err
	}
	return s.writeOrgEvents(c, func(store.EventConfig) (store.EventConfig, error) { return cfg, nil },
		func(ds *store.DeviceSettings) error {
			c := cfg.Clone()
			ds.Events = &c
			return nil
		})
}

// patchOrgEventSettings handles PATCH /organizations/{orgId}/event-settings:
// only the events listed (and vehicleType when given) change. With the
// organization profile enabled they change on every device of the
// organization too; what the call does not name stays as each device has it.
func (s *Server) patchOrgEventSettings(c *gin.Context) error {
	var dto eventConfigDTO
	if err := decode(c, &dto); err != nil {
		return err
	}
	return s.writeOrgEvents(c, dto.patchedEvents, func(ds *store.DeviceSettings) error {
		if ds.Events == nil {
			return nil // it follows the organization's settings already
		}
		cfg, err := dto.patchedEvents(*ds.Events)
		if err != nil {
			return prefixField(err, "device "+ds.IMEI+": ")
		}
		ds.Events = &cfg
		return nil
	})
}

// writeOrgEvents changes the organization's event settings with change and,
// with the organization profile enabled, every device's with perDevice;
// then it pushes the configuration and answers the organization's settings.
func (s *Server) writeOrgEvents(c *gin.Context, change func(store.EventConfig) (store.EventConfig, error),
	perDevice func(*store.DeviceSettings) error) error {
	var (
		cfg         store.EventConfig
		audioAlarms bool
	)
	err := s.writeOrgSettings(c, "organization.eventSettings", func(os *store.OrgSettings) error {
		current, alarms := orgEventConfig(os)
		next, err := change(current)
		if err != nil {
			return err
		}
		cfg, audioAlarms = next, alarms
		os.Events = &cfg
		return nil
	}, "device.events", perDevice)
	if err != nil {
		return err
	}
	return ok(c, toEventConfigDTO(cfg, audioAlarms))
}
