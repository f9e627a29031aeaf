package postgres

import (
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// deviceBillings are the device_billing rows, by IMEI.
type deviceBillings struct{ t *tx }

// DeviceBillings implements store.DeviceStateRecords.
func (t *tx) DeviceBillings() store.DeviceBillingRecords { return deviceBillings{t} }

// Get implements store.DeviceBillingRecords.
func (r deviceBillings) Get(imei string) (*store.DeviceBilling, error) {
	b := store.DeviceBilling{IMEI: imei}
	err := r.t.pg.QueryRow(r.t.ctx, `SELECT aux_billing_status, aux_billing_updated_at, subscription_updated_at, refurbished,
			refurbished_at
		FROM device_billing WHERE imei = $1`, imei).Scan(&b.AuxBillingStatus, zeroTime{&b.AuxBillingUpdatedAt},
		zeroTime{&b.SubscriptionUpdatedAt}, &b.Refurbished, zeroTime{&b.RefurbishedAt})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.NotFound("")
	}
	if err != nil {
		return nil, classify(err)
	}
	return &b, nil
}

// Put implements store.DeviceBillingRecords; store.ErrNotFound when the
// device is not in the inventory.
func (r deviceBillings) Put(b *store.DeviceBilling) error {
	_, err := r.t.pg.Exec(r.t.ctx, `INSERT INTO device_billing
			(imei, aux_billing_status, aux_billing_updated_at, subscription_updated_at, refurbished, refurbished_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (imei) DO UPDATE SET aux_billing_status = EXCLUDED.aux_billing_status,
			aux_billing_updated_at = EXCLUDED.aux_billing_updated_at,
			subscription_updated_at = EXCLUDED.subscription_updated_at, refurbished = EXCLUDED.refurbished,
			refurbished_at = EXCLUDED.refurbished_at`,
		b.IMEI, b.AuxBillingStatus, nullTime(b.AuxBillingUpdatedAt), nullTime(b.SubscriptionUpdatedAt), b.Refurbished,
		nullTime(b.RefurbishedAt))
	return missingDevice(err, b.IMEI)
}

// Delete implements store.DeviceBillingRecords.
func (r deviceBillings) Delete(imei string) error {
	_, err := r.t.exec(`DELETE FROM device_billing WHERE imei = $1`, imei)
	return err
}
