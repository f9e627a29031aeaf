package postgres

import (
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// hotspots are the hotspot states: table device_hotspots, one row per
// device, which goes with the device.
type hotspots struct{ t *tx }

// Hotspots implements store.TrackRecords.
func (t *tx) Hotspots() store.HotspotRecords { return hotspots{t} }

// hotspotColumns are the columns Get reads.
const hotspotColumns = `is_on, password, password_changed_at`

// Get implements store.HotspotRecords.
func (r hotspots) Get(imei string) (*store.HotspotState, error) {
	h := store.HotspotState{IMEI: imei}
	var password pgtype.Text
	if err := getMemo(r.t, tableDeviceHotspots, imei, `SELECT `+hotspotColumns+` FROM device_hotspots WHERE imei = $1`,
		[]any{&h.On, &password, zeroTime{&h.PasswordChangedAt}}, imei); err != nil {
		return nil, err
	}
	h.Password = password.String
	return &h, nil
}

// Put implements store.HotspotRecords.
func (r hotspots) Put(h *store.HotspotState) error {
	r.t.forget(tableDeviceHotspots, h.IMEI)
	_, err := r.t.exec(`INSERT INTO device_hotspots (imei, is_on, password, password_changed_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (imei) DO UPDATE SET is_on = EXCLUDED.is_on, password = EXCLUDED.password,
			password_changed_at = EXCLUDED.password_changed_at`,
		h.IMEI, h.On, pgtype.Text{String: h.Password, Valid: h.Password != ""}, nullTime(h.PasswordChangedAt))
	return err
}

// Delete implements store.HotspotRecords.
func (r hotspots) Delete(imei string) error {
	r.t.forget(tableDeviceHotspots, imei)
	_, err := r.t.exec(`DELETE FROM device_hotspots WHERE imei = $1`, imei)
	return err
}
