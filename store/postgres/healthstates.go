package postgres

import (
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// healthStates is the device health state set of a transaction: a keyed
// table (healthStateTable) whose Put, on the path of every status report,
// is written by hand.
type healthStates struct {
	keyedRows[string, store.HealthState]
}

// DeviceHealthStates implements store.AlarmRecords; a group commit reads
// the states of its devices ahead (Prefetch).
func (t *tx) DeviceHealthStates() store.KeyedRecords[string, store.HealthState] {
	return healthStates{keyedRows[string, store.HealthState]{t}}
}

// Put implements store.KeyedRecords: an upsert nobody waits for, which
// goes in one statement with those of neighbouring jobs (pipemerge.go).
func (s healthStates) Put(h *store.HealthState) error {
	s.t.forget(tableHealthStates, h.IMEI)
	return s.t.queueRow(healthKind, h.IMEI, `INSERT INTO device_health_states (imei, recording_test, adas_calibrated, reported_at)
		VALUES ($1, $2, $3, $4)`+upsertHealthSet,
		h.IMEI, pgtype.Text{String: h.RecordingTest, Valid: h.RecordingTest != ""}, h.AdasCalibrated, h.ReportedAt)
}

// upsertHealthSet is what an upsert of a health state sets when the row is
// there.
const upsertHealthSet = ` ON CONFLICT (imei) DO UPDATE SET recording_test = EXCLUDED.recording_test,
	adas_calibrated = EXCLUDED.adas_calibrated, reported_at = EXCLUDED.reported_at`

// healthKind merges health state upserts (Put's arguments); a row is the
// device's.
var healthKind = &mergeKind{
	sql: `INSERT INTO device_health_states (imei, recording_test, adas_calibrated, reported_at)
	SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[], $4::timestamptz[])` + upsertHealthSet,
	args: func(all []mergeable) []any {
		return []any{column[string](all, 0), column[pgtype.Text](all, 1), column[bool](all, 2), column[time.Time](all, 3)}
	}}
