package cloudapi

import (
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Handlers of the device configuration calls; deviceconfig.go holds the
// body and its rules.

// deviceConfigResult answers a device-config write: the devices changed
// (effectedImeis, as the reference contract names them), which of them get
// it now and which on reconnect, which were rejected, and the configuration.
type deviceConfigResult struct {
	bulkWriteResult
	Config deviceConfigDTO `json:"config"`
}

// getDeviceConfig handles GET /devices/{imei}/device-config: the
// configuration the device runs (its own, else its organization's, else
// the defaults).
func (s *Server) getDeviceConfig(c *gin.Context) error {
	e, ds, err := s.pathSettings(c)
	if err != nil {
		return err
	}
	return okConfig(c, toDeviceConfigDTO(e.Device, e.Privacy), s.configMetadata(c, ds.IMEI, ds.UpdatedAt))
}

// pathSettings reads the settings of the device the path names, if the
// caller may see it: those it runs (its own, else its organization's, else
// the defaults) and its own.
func (s *Server) pathSettings(c *gin.Context) (*store.Effective, *store.DeviceSettings, error) {
	var e *store.Effective
	var ds *store.DeviceSettings
	err := s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		if e, err = tx.EffectiveSettings(d.IMEI); err != nil {
			return err
		}
		ds, err = tx.DeviceSettings(d.IMEI)
		return err
	})
	return e, ds, err
}

// replacedConfig builds the configuration a PUT asks for: the named
// parameters over the defaults.
func replacedConfig(dto *deviceConfigDTO) (store.DeviceConfig, store.PrivacyConfig, error) {
	cfg, priv := store.DefaultDeviceConfig(), store.DefaultPrivacyConfig()
	err := dto.apply(&cfg, &priv)
	return cfg, priv, err
}

// putDeviceConfig handles PUT /devices/{imei}/device-config: the device's
// configuration is replaced; what the call does not name takes its default.
func (s *Server) putDeviceConfig(c *gin.Context) error {
	var dto deviceConfigDTO
	if err := decode(c, &dto); err != nil {
		return err
	}
	return s.replaceDeviceConfigs(c, s.pathDevice(c), &dto, "")
}

func putDeviceConfig(tx *store.Tx, imei string, cfg store.DeviceConfig, priv store.PrivacyConfig) error {
	ds, err := tx.DeviceSettings(imei)
	if err != nil {
		return err
	}
	p := copyPrivacy(priv)
	ds.Device, ds.Privacy = &cfg, &p
	return tx.PutDeviceSettings(ds, "device.config")
}

// putDevicesConfig handles PUT /devices/device-config: the same replacing
// configuration on many devices, named by IMEI or by organization and
// groups. The answer is per IMEI.
func (s *Server) putDevicesConfig(c *gin.Context) error {
	t, dto, err := decodeBulkConfig[deviceConfigDTO](c)
	if err != nil {
		return err
	}
	return s.replaceDeviceConfigs(c, s.targetDevices(c, t), dto, "config.")
}

// replaceDeviceConfigs replaces the configuration of the devices resolve
// names with the one dto asks for and answers per IMEI with it; field
// prefixes the members a broken rule names.
func (s *Server) replaceDeviceConfigs(c *gin.Context, resolve deviceResolver, dto *deviceConfigDTO, field string) error {
	cfg, priv, err := replacedConfig(dto)
	if err != nil {
		return prefixField(err, field)
	}
	res, err := s.writeDevices(c, resolve, func(tx *store.Tx, imei string) error {
		return putDeviceConfig(tx, imei, cfg, priv)
	})
	if err != nil {
		return err
	}
	return ok(c, deviceConfigResult{bulkWriteResult: res, Config: toDeviceConfigDTO(cfg, priv)})
}

// orgDeviceConfig returns an organization's device configuration and privacy
// object: its own default, else the built-in defaults.
func orgDeviceConfig(os *store.OrgSettings) (store.DeviceConfig, store.PrivacyConfig) {
	cfg, priv := store.DefaultDeviceConfig(), store.DefaultPrivacyConfig()
	if os.Device != nil {
		cfg = *os.Device
	}
	if os.Privacy != nil {
		priv = copyPrivacy(*os.Privacy)
	}
	return cfg, priv
}

// orgSettings reads the settings of the path's organization, if the caller may see it.
func (s *Server) orgSettings(c *gin.Context) (*store.OrgSettings, error) {
	var os *store.OrgSettings
	err := s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		os, err = tx.OrgSettings(o.ID)
		return err
	})
	return os, err
}

// getOrgDeviceSettings handles GET /organizations/{orgId}/device-settings.
func (s *Server) getOrgDeviceSettings(c *gin.Context) error {
	os, err := s.orgSettings(c)
	if err != nil {
		return err
	}
	return ok(c, toDeviceConfigDTO(orgDeviceConfig(os)))
}

// postOrgDeviceSettings handles POST /organizations/{orgId}/device-settings:
// the named parameters of the organization's default change, the others
// stay. Devices without their own configuration follow the default; with the
// organization profile enabled every current device takes it as well.
func (s *Server) postOrgDeviceSettings(c *gin.Context) error {
	var dto deviceConfigDTO
	if err := decode(c, &dto); err != nil {
		return err
	}
	var (
		cfg  store.DeviceConfig
		priv store.PrivacyConfig
	)
	err := s.writeOrgSettings(c, "organization.deviceSettings", func(os *store.OrgSettings) error {
		cfg, priv = orgDeviceConfig(os)
		if err := dto.apply(&cfg, &priv); err != nil {
			return err
		}
		os.Device = &cfg
		if dto.Privacy != nil || os.Privacy != nil {
			p := copyPrivacy(priv)
			os.Privacy = &p
		}
		return nil
	}, "device.config", func(ds *store.DeviceSettings) error {
		c := cfg
		ds.Device = &c
		if dto.Privacy != nil {
			p := copyPrivacy(priv)
			ds.Privacy = &p
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, toDeviceConfigDTO(cfg, priv))
}

// writeOrgSettings changes the settings of the path's organization with
// change, audited under action, and with the organization profile enabled
// every device's with perDevice, audited under deviceAction; then it asks
// the broker to deliver the configuration of every device of the
// organization.
func (s *Server) writeOrgSettings(c *gin.Context, action string, change func(*store.OrgSettings) error,
	deviceAction string, perDevice func(*store.DeviceSettings) error) error {
	var imeis []string
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		os, err := tx.OrgSettings(o.ID)
		if err != nil {
			return err
		}
		if err := change(os); err != nil {
			return err
		}
		if err := tx.PutOrgSettings(os, action); err != nil {
			return err
		}
		if o.IsOrganizationProfileEnabled {
			if _, err := tx.UpdateOrgDeviceSettings(o.ID, deviceAction, perDevice); err != nil {
				return err
			}
		}
		imeis, err = tx.OrgIMEIs(o.ID)
		return err
	})
	if err == nil {
		s.pushConfig(imeis...)
	}
	return err
}
