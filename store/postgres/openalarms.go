package postgres

import (
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// openAlarms is the open-alarm set of a transaction: table open_alarms,
// one row per device and definition with the id of its open system alarm.
// A row goes with its device and with its alarm.
type openAlarms struct{ t *tx }

// OpenAlarms implements store.AlarmRecords.
func (t *tx) OpenAlarms() store.OpenAlarmSet { return openAlarms{t} }

// Get implements store.OpenAlarmSet.
func (s openAlarms) Get(imei string, def int64) (int64, error) {
	var id int64
	err := s.t.pg.QueryRow(s.t.ctx, `SELECT alarm_id FROM open_alarms WHERE imei = $1 AND definition_id = $2`,
		imei, def).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return id, classify(err)
}

// Put implements store.OpenAlarmSet.
func (s openAlarms) Put(imei string, def int64, id int64) error {
	_, err := s.t.exec(`INSERT INTO open_alarms (imei, definition_id, alarm_id) VALUES ($1, $2, $3)
		ON CONFLICT (imei, definition_id) DO UPDATE SET alarm_id = EXCLUDED.alarm_id`, imei, def, id)
	return err
}

// Delete implements store.OpenAlarmSet.
func (s openAlarms) Delete(imei string, def int64) error {
	_, err := s.t.exec(`DELETE FROM open_alarms WHERE imei = $1 AND definition_id = $2`, imei, def)
	return err
}

// DeleteDevice implements store.OpenAlarmSet.
func (s openAlarms) DeleteDevice(imei string) error {
	_, err := s.t.exec(`DELETE FROM open_alarms WHERE imei = $1`, imei)
	return err
}
