package store

import (
	"crypto/rand"
	"fmt"
	"time"
)

// The Wi-Fi hotspot of an AI-12 dashcam. Its on/off switch is part of the
// device configuration (DeviceConfig.HotspotEnabled); its password is kept
// here, per device, because drivers need it from the organization: it is
// stored retrievably, delivered with the desired configuration, and never
// written to the audit log or any other log.
//
// The hotspot's rules: when the hotspot is first enabled, and each time it
// goes from Off to On, a new 20-character password is generated with at
// least one uppercase letter, one lowercase letter and one digit; after a
// factory reset the password reverts to a fixed default; a firmware update
// changes nothing.

// HotspotPasswordLength is the length of every hotspot password.
const HotspotPasswordLength = 20

// DefaultHotspotPassword is the fixed password a device's hotspot has out of
// the factory and after a factory reset.
const DefaultHotspotPassword = "FleetcamHotspot00000"

const hotspotAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// HotspotState is a device's hotspot as the cloud last configured it.
type HotspotState struct {
	IMEI string `json:"imei"`
	// On is the effective on/off state the password was last kept in step with.
	On bool `json:"on"`
	// Password is empty while the factory default is in use.
	Password          string    `json:"password,omitempty"`
	PasswordChangedAt time.Time `json:"passwordChangedAt,omitzero"`
}

// CurrentPassword is the password the hotspot uses.
func (h *HotspotState) CurrentPassword() string {
	if h.Password == "" {
		return DefaultHotspotPassword
	}
	return h.Password
}

// dropHotspot drops the hotspot state of a removed device.
func dropHotspot(tx *Tx, d *Device) error {
	return tx.rec.Hotspots().Delete(d.IMEI)
}

// NewHotspotPassword draws a password of HotspotPasswordLength characters
// from crypto/rand, uniformly over the alphanumeric strings that hold at
// least one uppercase letter, one lowercase letter and one digit.
func NewHotspotPassword() (string, error) {
	buf := make([]byte, 64)
	for {
		out := make([]byte, 0, HotspotPasswordLength)
		for len(out) < HotspotPasswordLength {
			if _, err := rand.Read(buf); err != nil {
				return "", fmt.Errorf("store: hotspot password: %w", err)
			}
			for _, b := range buf {
				// 248 is the largest multiple of 62 not above 256: rejecting
				// the bytes above it keeps every character equally likely.
				if b < 248 && len(out) < HotspotPasswordLength {
					out = append(out, hotspotAlphabet[int(b)%len(hotspotAlphabet)])
				}
			}
		}
		if p := string(out); ValidHotspotPassword(p) {
			return p, nil
		}
	}
}

// ValidHotspotPassword reports whether p follows the hotspot password rules.
func ValidHotspotPassword(p string) bool {
	if len(p) != HotspotPasswordLength {
		return false
	}
	var upper, lower, digit bool
	for _, c := range []byte(p) {
		switch {
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= '0' && c <= '9':
			digit = true
		default:
			return false
		}
	}
	return upper && lower && digit
}

// Hotspot returns the hotspot state of imei (off with the default password
// when the cloud never switched it on).
func (tx *Tx) Hotspot(imei string) (*HotspotState, error) {
	if _, err := tx.Device(imei); err != nil {
		return nil, err
	}
	h, err := tx.rec.Hotspots().Get(imei)
	if isNotFound(err) {
		return &HotspotState{IMEI: imei}, nil
	}
	return h, err
}

// HotspotPassword returns the password the hotspot of imei uses.
func (tx *Tx) HotspotPassword(imei string) (string, error) {
	h, err := tx.Hotspot(imei)
	if err != nil {
		return "", err
	}
	return h.CurrentPassword(), nil
}

// syncHotspot keeps the hotspot password in step with the device's
// effective configuration: a switch from Off to On (the first one included)
// draws a new password. It runs after every write that can change the
// effective configuration.
func (tx *Tx) syncHotspot(imei string) error {
	h, err := tx.Hotspot(imei)
	if err != nil {
		return err
	}
	cfg, err := tx.effectiveDeviceConfig(imei)
	if err != nil {
		return err
	}
	on := cfg.HotspotEnabled
	if on == h.On {
		return nil
	}
	if on {
		if h.Password, err = NewHotspotPassword(); err != nil {
			return err
		}
		h.PasswordChangedAt = tx.now
	}
	h.On = on
	if err := tx.rec.Hotspots().Put(h); err != nil {
		return err
	}
	if !on {
		return nil
	}
	return tx.auditHotspot(imei, "device.hotspot.password", "hotspot switched on", h)
}

// ResetHotspot reverts the hotspot password of imei to the fixed default.
// The broker calls it when the device reports a factory reset. The on/off
// state stays as configured; the next switch from Off to On draws a new
// password. The config version is bumped so the device receives it.
func (tx *Tx) ResetHotspot(imei string) error {
	h, err := tx.Hotspot(imei)
	if err != nil {
		return err
	}
	h.Password, h.PasswordChangedAt = "", tx.now
	if err := tx.rec.Hotspots().Put(h); err != nil {
		return err
	}
	ds, err := tx.DeviceSettings(imei)
	if err != nil {
		return err
	}
	if _, _, err := tx.putDeviceSettings(ds); err != nil {
		return err
	}
	return tx.auditHotspot(imei, "device.hotspot.reset", "factory reset", h)
}

// auditHotspot records a password change without the password.
func (tx *Tx) auditHotspot(imei, action, reason string, h *HotspotState) error {
	d, err := tx.Device(imei)
	if err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: action, EntityType: "device", EntityID: imei, Reason: reason,
		OrganizationID: d.OrganizationID, PartnerID: d.PartnerID,
		After: map[string]any{"hotspotEnabled": h.On, "defaultPassword": h.Password == "",
			"passwordChangedAt": h.PasswordChangedAt}})
}

// effectiveDeviceConfig resolves only the device configuration of imei.
func (tx *Tx) effectiveDeviceConfig(imei string) (DeviceConfig, error) {
	cfg := DefaultDeviceConfig()
	d, err := tx.Device(imei)
	if err != nil {
		return cfg, err
	}
	ds, err := tx.DeviceSettings(imei)
	if err != nil {
		return cfg, err
	}
	os, err := tx.OrgSettings(d.OrganizationID)
	if err != nil {
		return cfg, err
	}
	pick(&cfg, ds.Device, os.Device)
	return cfg, nil
}
