package postgres

import (
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// healthStates is the device health state set of a transaction: table
// device_health_states, one row per device, which goes with the device.
type healthStates struct{ t *tx }

// DeviceHealthStates implements store.AlarmRecords.
func (t *tx) DeviceHealthStates() store.DeviceHealthStateSet { return healthStates{t} }

// healthStateColumns are the columns Get reads, in order.
const healthStateColumns = `recording_test, adas_calibrated, reported_at`

// Get implements store.DeviceHealthStateSet; a group commit reads the
// states of its devices ahead (Prefetch).
func (s healthStates) Get(imei string) (*store.HealthState, error) {
	h := store.HealthState{IMEI: imei}
	var test pgtype.Text
	err := getMemo(s.t, tableHealthStates, imei, `SELECT `+healthStateColumns+` FROM device_health_states WHERE imei = $1`,
		[]any{&test, &h.AdasCalibrated, zeroTime{&h.ReportedAt}}, imei)
	if err != nil {
		return nil, err
	}
	h.RecordingTest = test.String
	return &h, nil
}

// Put implements store.DeviceHealthStateSet: an upsert nobody waits for.
func (s healthStates) Put(h *store.HealthState) error {
	s.t.forget(tableHealthStates, h.IMEI)
	return s.t.queue(`INSERT INTO device_health_states (imei, recording_test, adas_calibrated, reported_at)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (imei) DO UPDATE SET recording_test = EXCLUDED.recording_test,
			adas_calibrated = EXCLUDED.adas_calibrated, reported_at = EXCLUDED.reported_at`,
		h.IMEI, pgtype.Text{String: h.RecordingTest, Valid: h.RecordingTest != ""}, h.AdasCalibrated, h.ReportedAt)
}

// Delete implements store.DeviceHealthStateSet.
func (s healthStates) Delete(imei string) error {
	s.t.forget(tableHealthStates, imei)
	_, err := s.t.exec(`DELETE FROM device_health_states WHERE imei = $1`, imei)
	return err
}
