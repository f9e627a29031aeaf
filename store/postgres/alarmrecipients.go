package postgres

import (
	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// alarmRecipients is the alarm recipient set of a transaction: table
// alarm_recipients, whose identity gives the ids. A partner-wide
// recipient has no organization (NULL); the definitions it is limited to
// are an array, empty for none.
type alarmRecipients struct{ t *tx }

// AlarmRecipients implements store.AlarmRecords.
func (t *tx) AlarmRecipients() store.AlarmRecipientSet { return alarmRecipients{t} }

// recipientColumns are the columns of a recipient, in recipientFields'
// order.
const recipientColumns = `id, kind, email, report_interval_seconds, partner_id, organization_id, alarm_definitions,
	created_by_audience, created_by_id, last_alarm_id, last_report_at, created_at`

// recipientFields are the scan targets of recipientColumns in r.
func recipientFields(r *store.AlarmRecipient) []any {
	return []any{&r.ID, &r.Kind, &r.Email, &r.ReportIntervalSeconds, zeroID{&r.PartnerID}, zeroID{&r.OrganizationID},
		&r.AlarmDefinitions, &r.CreatedByAudienceName, zeroID{&r.CreatedByID}, &r.LastAlarmID,
		zeroTime{&r.LastReportAt}, zeroTime{&r.CreatedAt}}
}

// recipientArgs are the parameters $1 to $11 of r's row: recipientColumns
// but the id.
func recipientArgs(r *store.AlarmRecipient) []any {
	defs := r.AlarmDefinitions
	if defs == nil {
		defs = []int64{}
	}
	return []any{r.Kind, r.Email, r.ReportIntervalSeconds, nullID(r.PartnerID), nullID(r.OrganizationID), defs,
		r.CreatedByAudienceName, nullID(r.CreatedByID), r.LastAlarmID, nullTime(r.LastReportAt), r.CreatedAt}
}

// scanRecipient finishes a scanned recipient: no definitions is nil.
func scanRecipient(r *store.AlarmRecipient) {
	if len(r.AlarmDefinitions) == 0 {
		r.AlarmDefinitions = nil
	}
}

// Get implements store.AlarmRecipientSet.
func (s alarmRecipients) Get(id int64) (*store.AlarmRecipient, error) {
	var r store.AlarmRecipient
	if err := getOne(s.t, `SELECT `+recipientColumns+` FROM alarm_recipients WHERE id = $1`, recipientFields(&r), id); err != nil {
		return nil, err
	}
	scanRecipient(&r)
	return &r, nil
}

// Insert implements store.AlarmRecipientSet.
func (s alarmRecipients) Insert(r *store.AlarmRecipient) error {
	return getOne(s.t, `INSERT INTO alarm_recipients (kind, email, report_interval_seconds, partner_id,
			organization_id, alarm_definitions, created_by_audience, created_by_id, last_alarm_id, last_report_at,
			created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`, []any{&r.ID}, recipientArgs(r)...)
}

// Put implements store.AlarmRecipientSet; a recipient not stored is
// store.ErrNotFound.
func (s alarmRecipients) Put(r *store.AlarmRecipient) error {
	tag, err := s.t.exec(`UPDATE alarm_recipients SET kind = $1, email = $2, report_interval_seconds = $3,
			partner_id = $4, organization_id = $5, alarm_definitions = $6, created_by_audience = $7,
			created_by_id = $8, last_alarm_id = $9, last_report_at = $10, created_at = $11
		WHERE id = $12`, append(recipientArgs(r), r.ID)...)
	return affected(tag, err, "recipient %d", r.ID)
}

// Delete implements store.AlarmRecipientSet.
func (s alarmRecipients) Delete(id int64) error {
	_, err := s.t.exec(`DELETE FROM alarm_recipients WHERE id = $1`, id)
	return err
}

// List implements store.AlarmRecipientSet.
func (s alarmRecipients) List() ([]store.AlarmRecipient, error) {
	return collect(s.t, func(row pgx.CollectableRow) (store.AlarmRecipient, error) {
		var r store.AlarmRecipient
		err := row.Scan(recipientFields(&r)...)
		scanRecipient(&r)
		return r, err
	}, `SELECT `+recipientColumns+` FROM alarm_recipients ORDER BY id`)
}
