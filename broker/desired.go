package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// DesiredFromSettings maps a device's effective settings to the desired
// configuration on the wire; its version is the settings version. Per-event
// settings go out resolved, so the device applies no defaults of its own.
func DesiredFromSettings(e *store.Effective) protocol.DesiredConfig {
	d, ev, p := e.Device, e.Events, e.Privacy
	out := protocol.DesiredConfig{
		Version: e.Version,
		Device: protocol.DeviceConfig{
			AudioAlarms: d.AudioAlarms, VoiceRecording: d.VoiceRecording, Brightness: d.Brightness,
			SetTimezoneByCloud: d.SetTimezoneByCloud, PinCodeDi: d.PinCodeDi, QrDi: d.QrDi,
			DriverIdentification: d.DriverIdentification, DriverPrompt: d.DriverPrompt, AudioAlert: d.AudioAlert,
			DriverPromptDurationSeconds: d.DriverPromptDurationSeconds, LiveVideo: d.LiveVideo,
			StandbyMinutes: d.StandbyMinutes, HotspotOn: d.HotspotEnabled, HotspotPassword: e.HotspotPassword,
			InternetAccess: d.InternetAccess, Adas: d.Adas, DistractedDriver: d.DistractedDriver,
			DriverCamera: d.DriverCamera, InCabinCameraRecording: d.InCabinCameraRecording,
			TextOverlay: d.TextOverlay, DriverPosition: d.DriverPosition, SpeedUnits: d.SpeedUnits,
			DateTimeUnits: d.DateTimeUnits, NotifyLiveStreaming: d.NotifyLiveStreaming,
			VirtualIgnition: d.VirtualIgnition, ScreenTimeoutSeconds: d.ScreenTimeoutSeconds,
			PassengerLimit: d.PassengerLimit, WakeupMessage: d.WakeupMessage,
			WakeupMessageSeconds: d.WakeupMessageSeconds, LEDEnabled: d.LEDEnabled,
		},
		Events: protocol.EventConfig{
			VehicleType: ev.VehicleType, LaneWeavingTimes: ev.LaneWeavingTimes,
			LaneWeavingDurationSeconds: ev.LaneWeavingDurationSeconds, DrivingDurationHours: ev.DrivingDurationHours,
			MvaiMinSpeedKmh: ev.MvaiMinSpeedKmh, SpeedLimitKmh: ev.SpeedLimitKmh,
		},
		Privacy: protocol.PrivacyConfig{
			RecordingEnabled: p.RecordingEnabled, AllEventsEnabled: p.AllEventsEnabled,
			LiveStreamEnabled: p.LiveStreamEnabled, MvaiEnabled: p.MvaiEnabled, GPSEnabled: p.GPSEnabled,
			Cameras: maps.Clone(p.Cameras), CameraRecording: maps.Clone(p.CameraRecording), Mode: e.PrivacyMode,
		},
	}
	if len(ev.Events) > 0 {
		out.Events.Events = make(map[string]protocol.EventSetting, len(ev.Events))
		for k := range ev.Events {
			r := e.Event(k)
			out.Events.Events[k] = protocol.EventSetting{Enabled: r.Enabled, VisualAlert: r.VisualAlert,
				AudioAlert: r.AudioAlert, DataType: r.DataType, MinimumSpeedKmh: r.MinimumSpeedKmh,
				NumberOfBeeps: r.NumberOfBeeps, Weight: r.Weight}
		}
	}
	if e.PrivacyModeSet {
		m := protocol.PrivacyModeConfig(e.PrivacyModeConfig)
		out.Privacy.ModeConfig = &m
	}
	for _, g := range e.Geofences {
		out.Geofences = append(out.Geofences, protocol.Geofence{ID: g.ID, Name: g.Name,
			Circle: &protocol.Circle{Center: protocol.LatLon{Lat: g.Lat, Lon: g.Lon}, RadiusMeters: g.Radius}})
	}
	for _, c := range e.Drivers {
		out.Drivers = append(out.Drivers, protocol.DriverCredential{DriverID: c.DriverID, PinCode: c.PinCode, QRCode: c.QRCode})
	}
	out.Control = controlConfig(e.Control)
	if e.RetentionMinutes > 0 {
		out.RetentionMinutes = e.RetentionMinutes
		out.RetentionDays = (e.RetentionMinutes + 24*60 - 1) / (24 * 60)
	}
	if len(e.CameraRetention) > 0 {
		out.CameraRetentionMinutes = map[string]int{}
		for _, r := range e.CameraRetention {
			out.CameraRetentionMinutes[strconv.Itoa(r.CameraID)] = r.RetentionMinutes
		}
	}
	return out
}

// controlConfig maps resolved control settings to the wire; the
// calibration state stays in the cloud.
func controlConfig(c store.DeviceControl) protocol.ControlConfig {
	out := protocol.ControlConfig{Mode: c.Mode, OTGEnabled: store.Enabled(c.OTGEnabled),
		TailgatingCoolOffMinutes: c.TailgatingCoolOffMinutes, AutoCalibration: store.Enabled(c.AutoCalibration),
		CameraNames: maps.Clone(c.CameraNames)}
	if out.Mode == "" {
		out.Mode = protocol.ModeNormal
	}
	if a := c.ADAS; a != nil {
		out.ADAS = &protocol.ADASMeasurements{CameraHeight: a.CameraHeight, CameraOffset: a.CameraOffset, VehicleWidth: a.VehicleWidth}
		if a.Points != nil {
			p := protocol.ADASPoints(*a.Points)
			out.ADAS.Points = &p
		}
	}
	if p := c.PinCodes; p != nil {
		out.PinCodes = &protocol.PinCodeHashes{Salt: p.Salt, AdminPinHash: p.AdminPinHash, DriverPinHash: p.DriverPinHash}
	}
	return out
}

// desired builds the desired configuration of dev.
func (s *Server) desired(tx *store.Tx, dev *store.Device) (protocol.DesiredConfig, error) {
	if s.DesiredConfig != nil {
		return s.DesiredConfig(tx, dev)
	}
	e, err := tx.EffectiveSettings(dev.IMEI)
	if err != nil {
		return protocol.DesiredConfig{}, err
	}
	return DesiredFromSettings(e), nil
}

// PushConfig delivers the device's desired configuration now when it is
// connected and has not acknowledged that version; an offline device gets
// it on its next connection. The API calls it after changing settings.
func (s *Server) PushConfig(imei string) error {
	l := s.links.byIMEI(imei)
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !s.subscribed(imei, protocol.Topic(imei, protocol.TopicConfig)) {
		return nil
	}
	return s.pushConfigLocked(l)
}

// pushConfigAfterAck pushes the desired configuration again after the
// device acknowledged version, unless that is the version this connection
// was sent: then nothing newer is due until the settings change, and a
// change pushes again itself (PushConfig).
func (s *Server) pushConfigAfterAck(l *link, version int64) {
	l.mu.Lock()
	sent := l.pushed
	l.mu.Unlock()
	if version == sent {
		return
	}
	_ = s.PushConfig(l.imei)
}

// PushOrganizationConfig pushes the desired configuration to every connected
// device of the organization, after a change of its default settings.
func (s *Server) PushOrganizationConfig(orgID int64) error {
	var imeis []string
	err := s.db.View(context.Background(), func(tx *store.Tx) error {
		devs, _, err := tx.Devices(store.DeviceFilter{OrganizationID: orgID}, store.Page{})
		for _, d := range devs {
			imeis = append(imeis, d.IMEI)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("broker: list devices of organization %d: %w", orgID, err)
	}
	for _, imei := range imeis {
		if err := s.PushConfig(imei); err != nil {
			return err
		}
	}
	return nil
}

// pushConfigLocked publishes the desired configuration unless the device
// acknowledged its version or it was already sent on this connection. The
// caller holds l.mu.
func (s *Server) pushConfigLocked(l *link) error {
	var d desiredDue
	err := s.db.ViewDevice(context.Background(), l.imei, store.ViewDriverCredentials, func(tx *store.Tx) (err error) {
		d, err = s.desiredDue(tx, l)
		return err
	})
	return s.publishDesiredLocked(l, d, err)
}

// desiredDue is the desired configuration a connection is to be sent,
// unless skip.
type desiredDue struct {
	cfg  protocol.DesiredConfig
	skip bool // acknowledged, or already sent on this connection
}

// desiredDue reads in tx what l's device is to be sent of its desired
// configuration. The caller holds l.mu.
func (s *Server) desiredDue(tx *store.Tx, l *link) (desiredDue, error) {
	dl, err := tx.DeviceLink(l.imei)
	if err != nil {
		return desiredDue{}, err
	}
	due := func(version int64) bool {
		// An acknowledgement above version acknowledged a version never
		// issued (one stored before acknowledgements were checked): it
		// acknowledges nothing.
		acked := !dl.ConfigAckedAt.IsZero() && dl.AckedConfigVersion == version
		return !acked && l.pushed != version
	}
	if s.DesiredConfig == nil {
		// The desired configuration's version is the device settings'
		// version: most connections need no more to tell nothing is due.
		ds, err := tx.DeviceSettings(l.imei)
		if err != nil {
			return desiredDue{}, err
		}
		if !due(ds.Version) {
			return desiredDue{skip: true}, nil
		}
	}
	dev, err := tx.Device(l.imei)
	if err != nil {
		return desiredDue{}, err
	}
	cfg, err := s.desired(tx, dev)
	if err != nil {
		return desiredDue{}, err
	}
	return desiredDue{cfg: cfg, skip: !due(cfg.Version)}, nil
}

// desiredVersion is the version of the desired configuration dev is sent now.
func (s *Server) desiredVersion(tx *store.Tx, dev *store.Device) (int64, error) {
	if s.DesiredConfig == nil {
		ds, err := tx.DeviceSettings(dev.IMEI)
		if err != nil {
			return 0, err
		}
		return ds.Version, nil
	}
	cfg, err := s.desired(tx, dev)
	return cfg.Version, err
}

// publishDesiredLocked publishes d unless it is skipped or could not be
// read (err). The caller holds l.mu.
func (s *Server) publishDesiredLocked(l *link, d desiredDue, err error) error {
	if err != nil {
		s.log.Error("build desired configuration", "imei", l.imei, "error", err)
		return fmt.Errorf("broker: desired configuration of %s: %w", l.imei, err)
	}
	if d.skip {
		return nil
	}
	if err := s.publishJSON(l.imei, protocol.TopicConfig, d.cfg, nil); err != nil {
		return err
	}
	l.pushed = d.cfg.Version
	s.metrics.configPushes.Inc()
	return nil
}

// publishJSON publishes v at QoS 1 to the device's down topic suffix, with
// props when set. Nothing is sent unless the device's session subscribes
// to the topic.
func (s *Server) publishJSON(imei, suffix string, v any, props *packets.Properties) error {
	topic := protocol.Topic(imei, suffix)
	payload, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("broker: encode %s: %w", topic, err)
	}
	if _, err := s.mqtt.Publish(imei, topic, payload, props); err != nil {
		return fmt.Errorf("broker: publish %s: %w", topic, err)
	}
	return nil
}
