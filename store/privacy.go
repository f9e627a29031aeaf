package store

// Privacy mode. Switching it is the one settings change audited with an
// entry of its own (device id, initiating user id, state before and after,
// timestamp) and reported to webhooks as a privacyMode system message.

// Privacy mode values as stored and put on the wire.
const (
	PrivacyModeOn  = "on"
	PrivacyModeOff = "off"
)

// The API's names of the privacy modes (on is general, off is disabled),
// which the audit entries of a switch speak as well.
const (
	PrivacyModeGeneral  = "general"
	PrivacyModeDisabled = "disabled"
)

// PrivacyModeAPIName is the API's name of a stored privacy mode.
func PrivacyModeAPIName(mode string) string {
	if mode == PrivacyModeOn {
		return PrivacyModeGeneral
	}
	return PrivacyModeDisabled
}

// PrivacyModeChange is the audit content of a privacy-mode switch, the
// mode named as the API names it.
type PrivacyModeChange struct {
	DeviceID    string `json:"deviceId"`
	PrivacyMode string `json:"privacyMode"`
}

// SetPrivacyMode switches the privacy mode of imei to mode ("on" or "off").
// pending says the device is offline and applies the change when it
// reconnects. A switch bumps the config version, writes one audit entry
// (action device.privacyMode, before and after) and a privacyMode system
// message, all in this transaction. It returns the mode before; setting the
// mode the device already has changes nothing.
func (tx *Tx) SetPrivacyMode(imei, mode string, pending bool) (before string, err error) {
	if mode != PrivacyModeOn && mode != PrivacyModeOff {
		return "", Invalid("", "privacyMode %q must be on or off", mode)
	}
	ds, err := tx.DeviceSettings(imei)
	if err != nil {
		return "", err
	}
	before = ds.PrivacyMode
	if before == "" {
		before = PrivacyModeOff
	}
	if ds.PrivacyMode == mode {
		return before, nil
	}
	ds.PrivacyMode = mode
	d, _, err := tx.putDeviceSettings(ds)
	if err != nil {
		return "", err
	}
	if err := tx.Audit(AuditChange{Action: "device.privacyMode", EntityType: "device", EntityID: imei,
		OrganizationID: d.OrganizationID, PartnerID: d.PartnerID,
		Before: PrivacyModeChange{DeviceID: imei, PrivacyMode: PrivacyModeAPIName(before)},
		After:  PrivacyModeChange{DeviceID: imei, PrivacyMode: PrivacyModeAPIName(mode)}}); err != nil {
		return "", err
	}
	return before, tx.Emit(Message{Kind: MessageSystem, SubType: SystemPrivacyMode, OrganizationID: d.OrganizationID,
		PartnerID: d.PartnerID, IMEI: imei, Privacy: &PrivacyFact{Change: "mode", Before: before, After: mode,
			InitiatedBy: tx.actor.UserID, Pending: pending}})
}

// PrivacyModeApplied records that imei confirmed a privacy-mode switch it
// received after reconnecting: a privacyMode system message of change
// "applied" with the mode before and after, so that partners learn about
// changes made while the device was offline once they take effect.
func (tx *Tx) PrivacyModeApplied(imei, before, after string) error {
	d, err := tx.Device(imei)
	if err != nil {
		return err
	}
	return tx.Emit(Message{Kind: MessageSystem, SubType: SystemPrivacyMode, OrganizationID: d.OrganizationID,
		PartnerID: d.PartnerID, IMEI: imei, Privacy: &PrivacyFact{Change: "applied", Before: before, After: after}})
}

// SetPrivacyModeConfig stores what privacy mode keeps enabled on imei,
// audits it and records a privacyMode system message of change "config".
func (tx *Tx) SetPrivacyModeConfig(imei string, cfg PrivacyModeConfig, pending bool) error {
	ds, err := tx.DeviceSettings(imei)
	if err != nil {
		return err
	}
	ds.PrivacyModeConfig = &cfg
	if err := tx.PutDeviceSettings(ds, "device.privacyConfig"); err != nil {
		return err
	}
	return tx.NotifyPrivacyConfig(imei, pending)
}

// NotifyPrivacyConfig records a privacyMode system message of change
// "config" carrying the effective privacy-mode configuration of imei; it is
// for a device whose configuration changed through its organization's default.
func (tx *Tx) NotifyPrivacyConfig(imei string, pending bool) error {
	d, err := tx.Device(imei)
	if err != nil {
		return err
	}
	e, err := tx.resolveSettings(d)
	if err != nil {
		return err
	}
	cfg := e.PrivacyModeConfig
	return tx.Emit(Message{Kind: MessageSystem, SubType: SystemPrivacyMode, OrganizationID: d.OrganizationID,
		PartnerID: d.PartnerID, IMEI: imei, Privacy: &PrivacyFact{Change: "config", Config: &cfg,
			InitiatedBy: tx.actor.UserID, Pending: pending}})
}
