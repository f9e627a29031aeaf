package store

import (
	"time"
)

// Billing: what a partner is billed for a device. The device billing status
// is the device status (activated, deactivated, pendingActivation,
// suspended); auxiliary camera billing is enabled or disabled per device;
// the subscription id is the device's data profile (Device.DataProfileID).
// A refurbished device's billing status and auxiliary billing cannot change.

// Auxiliary billing states.
const (
	AuxBillingEnable  = "enable"
	AuxBillingDisable = "disable"
)

// NoAutoFirmwareSubscription is the first subscription id whose devices get
// no automatic firmware updates.
const NoAutoFirmwareSubscription = 10

// DeviceBilling is a device's billing record.
type DeviceBilling struct {
	IMEI                string    `json:"imei"`
	AuxBillingStatus    string    `json:"auxBillingStatus"`
	AuxBillingUpdatedAt time.Time `json:"auxBillingStatusUpdatedAt,omitzero"`
	// SubscriptionUpdatedAt is when the data profile last changed.
	SubscriptionUpdatedAt time.Time `json:"subscriptionUpdatedAt,omitzero"`
	Refurbished           bool      `json:"refurbished,omitempty"`
	// RefurbishedAt is when the device was last marked refurbished (it came
	// back through a return, RMA); zero when it is not, or was marked before
	// the time was kept.
	RefurbishedAt time.Time `json:"refurbishedAt,omitzero"`
}

// AutomaticFirmwareUpdates reports whether a subscription id lets the device update itself.
func AutomaticFirmwareUpdates(subscriptionID int64) bool {
	return subscriptionID < NoAutoFirmwareSubscription
}

// dropBilling drops the billing record of a removed device.
func dropBilling(tx *Tx, d *Device) error {
	return tx.rec.DeviceBillings().Delete(d.IMEI)
}

// DeviceBilling returns imei's billing record; auxiliary billing starts disabled.
func (tx *Tx) DeviceBilling(imei string) (*DeviceBilling, error) {
	d, err := tx.Device(imei)
	if err != nil {
		return nil, err
	}
	return tx.BillingOf(d)
}

// BillingOf is DeviceBilling of a device the caller has read already.
func (tx *Tx) BillingOf(d *Device) (*DeviceBilling, error) {
	imei := d.IMEI
	b, err := tx.rec.DeviceBillings().Get(imei)
	switch {
	case isNotFound(err):
		return &DeviceBilling{IMEI: imei, AuxBillingStatus: AuxBillingDisable}, nil
	case err != nil:
		return nil, err
	}
	return b, nil
}

func (tx *Tx) putBilling(b *DeviceBilling) error {
	return tx.rec.DeviceBillings().Put(b)
}

// billingOf returns imei's device and its billing record.
func (tx *Tx) billingOf(imei string) (*Device, *DeviceBilling, error) {
	d, err := tx.Device(imei)
	if err != nil {
		return nil, nil, err
	}
	b, err := tx.DeviceBilling(imei)
	if err != nil {
		return nil, nil, err
	}
	return d, b, nil
}

// changeableBilling is billingOf for a change of the billing status or the
// auxiliary billing, which a refurbished device refuses.
func (tx *Tx) changeableBilling(imei string) (*Device, *DeviceBilling, error) {
	d, b, err := tx.billingOf(imei)
	if err != nil {
		return nil, nil, err
	}
	if b.Refurbished {
		return nil, nil, Conflict("device %s is refurbished; its billing cannot change", imei)
	}
	return d, b, nil
}

// SetAuxBilling enables or disables auxiliary camera billing of imei.
// Enabling needs an auxiliary camera known for the device.
func (tx *Tx) SetAuxBilling(imei, status string) error {
	if status != AuxBillingEnable && status != AuxBillingDisable {
		return Invalid("billingStatus", "must be enable or disable")
	}
	d, b, err := tx.changeableBilling(imei)
	if err != nil {
		return err
	}
	if status == AuxBillingEnable {
		cams, err := tx.AuxCameras(imei)
		if err != nil {
			return err
		}
		if len(cams) == 0 {
			return Invalid("", "device %s has no auxiliary camera", imei)
		}
	}
	prev := *b
	b.AuxBillingStatus, b.AuxBillingUpdatedAt = status, tx.now
	if err := tx.putBilling(b); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "device.auxiliaryBilling", EntityType: "device", EntityID: imei,
		OrganizationID: d.OrganizationID, PartnerID: d.PartnerID,
		Before: map[string]any{"auxBillingStatus": prev.AuxBillingStatus}, After: map[string]any{"auxBillingStatus": status}})
}

// SetBillingStatus sets the device status of imei as a billing change.
func (tx *Tx) SetBillingStatus(imei, status string) error {
	if !ValidDeviceStatus(status) {
		return Invalid("billingStatus", "must be one of pendingActivation, activated, deactivated, suspended")
	}
	d, _, err := tx.changeableBilling(imei)
	if err != nil {
		return err
	}
	if d.Status == status {
		return nil
	}
	d.Status = status
	if status == DeviceActivated && d.ActivatedAt.IsZero() {
		d.ActivatedAt = tx.now
	}
	return tx.UpdateDevice(d, "device.billingStatus")
}

// SetRefurbished marks imei as refurbished or not.
func (tx *Tx) SetRefurbished(imei string, on bool) error {
	d, b, err := tx.billingOf(imei)
	if err != nil {
		return err
	}
	prev := b.Refurbished
	b.Refurbished, b.RefurbishedAt = on, time.Time{}
	if on {
		b.RefurbishedAt = tx.now
	}
	if err := tx.putBilling(b); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "device.refurbished", EntityType: "device", EntityID: imei,
		OrganizationID: d.OrganizationID, PartnerID: d.PartnerID,
		Before: map[string]any{"refurbished": prev}, After: map[string]any{"refurbished": on}})
}

// SubscriptionChange is the audit value of a subscription id update.
type SubscriptionChange struct {
	SubscriptionID           int64 `json:"subscriptionId"`
	AutomaticFirmwareUpdates bool  `json:"automaticFirmwareUpdates"`
}

// SetSubscription sets imei's subscription id (its data profile) and writes
// its audit entry, which names the reason or source, the time, the
// initiating user, and the previous and new subscription id.
func (tx *Tx) SetSubscription(imei string, id int64, reason string) error {
	if id < 1 {
		return Invalid("dataProfileId", "must be a positive integer")
	}
	d, b, err := tx.billingOf(imei)
	if err != nil {
		return err
	}
	prev := d.DataProfileID
	d.DataProfileID = id
	// The device is written as it is, not through UpdateDevice: this change
	// has an audit entry of its own (both subscription ids and the reason),
	// and UpdateDevice would add a second one with the whole device.
	if err := tx.rec.Devices().Put(d); err != nil {
		return err
	}
	b.SubscriptionUpdatedAt = tx.now
	if err := tx.putBilling(b); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "device.subscription.update", EntityType: "device", EntityID: imei,
		OrganizationID: d.OrganizationID, PartnerID: d.PartnerID, Reason: reason,
		Before: SubscriptionChange{SubscriptionID: prev, AutomaticFirmwareUpdates: AutomaticFirmwareUpdates(prev)},
		After:  SubscriptionChange{SubscriptionID: id, AutomaticFirmwareUpdates: AutomaticFirmwareUpdates(id)}})
}

// SetDefaultDataProfile sets an organization's default data profile, which
// devices added later receive. With the organization profile enabled it is
// also applied to every device of the organization at once.
func (tx *Tx) SetDefaultDataProfile(orgID, id int64, reason string) error {
	if id < 1 {
		return Invalid("defaultDataProfileId", "must be a positive integer")
	}
	o, err := tx.Organization(orgID)
	if err != nil {
		return err
	}
	o.DefaultDataProfileID = id
	if err := tx.UpdateOrganization(o); err != nil {
		return err
	}
	if !o.IsOrganizationProfileEnabled {
		return nil
	}
	return tx.eachOrgDevice(orgID, func(imei string) error { return tx.SetSubscription(imei, id, reason) })
}
