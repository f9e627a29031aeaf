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

// Get implements store.DeviceHealthStateSet.
func (s healthStates) Get(imei string) (*store.HealthState, error) {
	h := store.HealthState{IMEI: imei}
	var test pgtype.Text
	err := s.t.pg.QueryRow(s.t.ctx, `SELECT recording_test, adas_calibrated, reported_at
		FROM device_health_states WHERE imei = $1`, imei).Scan(&test, &h.AdasCalibrated, zeroTime{&h.ReportedAt})
	if err != nil {
		return nil, classify(err)
	}
	h.RecordingTest = test.String
	return &h, nil
}

// Put implements store.DeviceHealthStateSet.
func (s healthStates) Put(h *store.HealthState) error {
	_, err := s.t.exec(`INSERT INTO device_health_states (imei, recording_test, adas_calibrated, reported_at)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (imei) DO UPDATE SET recording_test = EXCLUDED.recording_test,
			adas_calibrated = EXCLUDED.adas_calibrated, reported_at = EXCLUDED.reported_at`,
		h.IMEI, pgtype.Text{String: h.RecordingTest, Valid: h.RecordingTest != ""}, h.AdasCalibrated, h.ReportedAt)
	return err
}

// Delete implements store.DeviceHealthStateSet.
func (s healthStates) Delete(imei string) error {
	_, err := s.t.exec(`DELETE FROM device_health_states WHERE imei = $1`, imei)
	return err
}
