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

// Get implements store.OpenAlarmSet; a group commit reads the open alarms
// of its devices ahead (Prefetch).
func (s openAlarms) Get(imei string, def int64) (int64, error) {
	if open, ok := s.t.memo.open[imei]; ok {
		return open[def], nil
	}
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
	if open, ok := s.t.memo.open[imei]; ok {
		open[def] = id
	}
	return s.t.queue(`INSERT INTO open_alarms (imei, definition_id, alarm_id) VALUES ($1, $2, $3)
		ON CONFLICT (imei, definition_id) DO UPDATE SET alarm_id = EXCLUDED.alarm_id`, imei, def, id)
}

// Delete implements store.OpenAlarmSet.
func (s openAlarms) Delete(imei string, def int64) error {
	if open, ok := s.t.memo.open[imei]; ok {
		delete(open, def)
	}
	return s.t.queue(`DELETE FROM open_alarms WHERE imei = $1 AND definition_id = $2`, imei, def)
}

// DeleteDevice implements store.OpenAlarmSet.
func (s openAlarms) DeleteDevice(imei string) error {
	delete(s.t.memo.open, imei)
	_, err := s.t.exec(`DELETE FROM open_alarms WHERE imei = $1`, imei)
	return err
}

// prefetchOpenAlarms reads the open system alarms of the devices of $1.
const prefetchOpenAlarms = `SELECT imei, definition_id, alarm_id FROM open_alarms WHERE imei = ANY($1)`

// readOpenAlarmsAhead keeps the open alarms prefetchOpenAlarms answers for
// the devices want, each device's complete.
func (t *tx) readOpenAlarmsAhead(br pgx.BatchResults, want []string) error {
	rows, err := br.Query()
	if err != nil {
		return classify(err)
	}
	if t.memo.open == nil {
		t.memo.open = map[string]map[int64]int64{}
	}
	for _, imei := range want {
		t.memo.open[imei] = map[int64]int64{}
	}
	var imei string
	var def, id int64
	_, err = pgx.ForEachRow(rows, []any{&imei, &def, &id}, func() error {
		t.memo.open[imei][def] = id
		return nil
	})
	return classify(err)
}
