package postgres

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// alarms is the alarm set of a transaction: table alarms, whose identity
// gives the ids; alarm_notes, the comments and actions, whose identity
// gives the note ids; and alarm_triples, the triples ever inserted, which
// the purge leaves alone.
type alarms struct{ t *tx }

var _ store.AlarmRecords = (*tx)(nil)

// Alarms implements store.AlarmRecords.
func (t *tx) Alarms() store.AlarmSet { return alarms{t} }

// alarmColumns are the columns of an alarm row a, in alarmFields' order.
const alarmColumns = `a.id, a.imei, a.organization_id, a.partner_id, a.user_id, a.definition_id, a.details,
	a.created_at, a.last_read_at, a.last_close_at, a.is_open, a.is_read, a.simulated, a.auto_closed`

// alarmFields are the scan targets of alarmColumns in a.
func alarmFields(a *store.Alarm) []any {
	return []any{&a.ID, &a.IMEI, &a.OrganizationID, &a.PartnerID, zeroID{&a.UserID}, &a.AlarmDefinitionID, &a.Details,
		zeroTime{&a.CreatedAt}, zeroTime{&a.LastReadAt}, zeroTime{&a.LastCloseAt}, &a.Open, &a.Read, &a.Simulated,
		&a.AutoClosed}
}

// alarmArgs are the parameters $1 to $14 of an alarm's row, in the order
// of alarmColumns.
func alarmArgs(a *store.Alarm) []any {
	return []any{a.ID, a.IMEI, a.OrganizationID, a.PartnerID, nullID(a.UserID), a.AlarmDefinitionID, a.Details,
		a.CreatedAt, nullTime(a.LastReadAt), nullTime(a.LastCloseAt), a.Open, a.Read, a.Simulated, a.AutoClosed}
}

// Get implements store.AlarmSet.
func (s alarms) Get(id int64) (*store.Alarm, error) {
	var a store.Alarm
	if err := getOne(s.t, `SELECT `+alarmColumns+` FROM alarms a WHERE a.id = $1`, alarmFields(&a), id); err != nil {
		return nil, err
	}
	list := []store.Alarm{a}
	if err := loadAlarmNotes(s.t, list); err != nil {
		return nil, err
	}
	return &list[0], nil
}

// NextID implements store.AlarmSet: the next value of the alarms' identity.
func (s alarms) NextID() (int64, error) {
	return queryValue[int64](s.t, `SELECT nextval('alarms_id_seq')`)
}

// LastID implements store.AlarmSet: the last value of the alarms' identity,
// which no transaction rolls back.
func (s alarms) LastID() (int64, error) {
	return queryValue[int64](s.t, `SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM alarms_id_seq`)
}

// NextNoteID implements store.AlarmSet: the next value of the notes'
// identity, which comments and actions share.
func (s alarms) NextNoteID() (int64, error) {
	return queryValue[int64](s.t, `SELECT nextval('alarm_notes_id_seq')`)
}

// noteValues is the SELECT of an alarm's notes from the parameters $15 to
// $23 that noteArgs gives, each row with the alarm id $1.
const noteValues = `SELECT n.id, $1, n.kind, n.action, n.details, n.commentor_name, n.created_by_audience,
		n.created_by_id, n.created_at, n.updated_at
	FROM unnest($15::bigint[], $16::text[], $17::text[], $18::text[], $19::text[], $20::text[], $21::bigint[],
		$22::timestamptz[], $23::timestamptz[])
		AS n (id, kind, action, details, commentor_name, created_by_audience, created_by_id, created_at, updated_at)`

// noteColumns are the columns of alarm_notes in noteValues' order.
const noteColumns = `id, alarm_id, kind, action, details, commentor_name, created_by_audience, created_by_id,
	created_at, updated_at`

// noteArgs are the parameters $15 to $23 of noteValues: one array per
// column, comments then actions.
func noteArgs(a *store.Alarm) []any {
	n := len(a.Comments) + len(a.Actions)
	ids := make([]int64, 0, n)
	kinds := make([]string, 0, n)
	actions := make([]pgtype.Text, 0, n)
	details := make([]pgtype.Text, 0, n)
	commentors := make([]pgtype.Text, 0, n)
	audiences := make([]string, 0, n)
	by := make([]pgtype.Int8, 0, n)
	created := make([]pgtype.Timestamptz, 0, n)
	updated := make([]pgtype.Timestamptz, 0, n)
	for _, c := range a.Comments {
		ids, kinds = append(ids, c.ID), append(kinds, "comment")
		actions = append(actions, pgtype.Text{})
		details = append(details, pgtype.Text{String: c.Details, Valid: true})
		commentors = append(commentors, pgtype.Text{String: c.CommentorName, Valid: true})
		audiences, by = append(audiences, c.CreatedByAudienceName), append(by, nullID(c.CreatedByID))
		created, updated = append(created, nullTime(c.CreatedAt)), append(updated, pgtype.Timestamptz{})
	}
	for _, c := range a.Actions {
		ids, kinds = append(ids, c.ID), append(kinds, "action")
		actions = append(actions, pgtype.Text{String: c.Type, Valid: true})
		details, commentors = append(details, pgtype.Text{}), append(commentors, pgtype.Text{})
		audiences, by = append(audiences, c.CreatedByAudienceName), append(by, nullID(c.CreatedByID))
		created, updated = append(created, nullTime(c.CreatedAt)), append(updated, nullTime(c.UpdatedAt))
	}
	return []any{ids, kinds, actions, details, commentors, audiences, by, created, updated}
}

// Insert implements store.AlarmSet: the alarm, its notes and its triple in
// one statement; the triple names a as the alarm last inserted with it.
func (s alarms) Insert(a *store.Alarm) error {
	args := append(append(alarmArgs(a), noteArgs(a)...), a.CreatedAt.Truncate(time.Millisecond))
	_, err := s.t.exec(`WITH alarm AS (
		INSERT INTO alarms (id, imei, organization_id, partner_id, user_id, definition_id, details, created_at,
			last_read_at, last_close_at, is_open, is_read, simulated, auto_closed)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
	), triple AS (
		INSERT INTO alarm_triples (imei, definition_id, created_at, alarm_id) VALUES ($2, $6, $24, $1)
		ON CONFLICT (imei, definition_id, created_at) DO UPDATE SET alarm_id = EXCLUDED.alarm_id
	)
	INSERT INTO alarm_notes (`+noteColumns+`) `+noteValues, args...)
	return err
}

// Put implements store.AlarmSet: it updates the alarm's row (not its
// device, definition and createdAt, which do not change), writes the notes
// that are new or changed and deletes those a no longer has, in one
// statement. An alarm not stored is store.ErrNotFound.
func (s alarms) Put(a *store.Alarm) error {
	var n int
	err := s.t.pg.QueryRow(s.t.ctx, `WITH alarm AS (
		UPDATE alarms SET organization_id = $3, partner_id = $4, user_id = $5, details = $7, last_read_at = $9,
			last_close_at = $10, is_open = $11, is_read = $12, simulated = $13, auto_closed = $14
		WHERE id = $1 AND imei = $2 AND definition_id = $6 AND created_at = $8
		RETURNING id
	), gone AS (
		DELETE FROM alarm_notes WHERE alarm_id = $1 AND id <> ALL ($15::bigint[])
	), notes AS (
		INSERT INTO alarm_notes (`+noteColumns+`) `+noteValues+`
		WHERE EXISTS (SELECT FROM alarm)
		ON CONFLICT (id) DO UPDATE SET alarm_id = EXCLUDED.alarm_id, kind = EXCLUDED.kind, action = EXCLUDED.action,
			details = EXCLUDED.details, commentor_name = EXCLUDED.commentor_name,
			created_by_audience = EXCLUDED.created_by_audience, created_by_id = EXCLUDED.created_by_id,
			created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at
		WHERE (alarm_notes.alarm_id, alarm_notes.kind, alarm_notes.action, alarm_notes.details,
			alarm_notes.commentor_name, alarm_notes.created_by_audience, alarm_notes.created_by_id,
			alarm_notes.created_at, alarm_notes.updated_at) IS DISTINCT FROM
			(EXCLUDED.alarm_id, EXCLUDED.kind, EXCLUDED.action, EXCLUDED.details, EXCLUDED.commentor_name,
			EXCLUDED.created_by_audience, EXCLUDED.created_by_id, EXCLUDED.created_at, EXCLUDED.updated_at)
	)
	SELECT count(*) FROM alarm`, append(alarmArgs(a), noteArgs(a)...)...).Scan(&n)
	if err != nil {
		return classify(err)
	}
	if n == 0 {
		return store.NotFound("alarm %d of device %s, definition %d, created at %s", a.ID, a.IMEI,
			a.AlarmDefinitionID, a.CreatedAt.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// putTriple records that tr.AlarmID was the alarm last inserted with tr's
// device, definition and createdAt (to the millisecond).
func (s alarms) putTriple(tr store.AlarmTriple) error {
	_, err := s.t.exec(`INSERT INTO alarm_triples (imei, definition_id, created_at, alarm_id) VALUES ($1, $2, $3, $4)
		ON CONFLICT (imei, definition_id, created_at) DO UPDATE SET alarm_id = EXCLUDED.alarm_id`,
		tr.IMEI, tr.DefinitionID, tr.CreatedAt.Truncate(time.Millisecond), tr.AlarmID)
	return err
}

// TripleTaken implements store.AlarmSet.
func (s alarms) TripleTaken(imei string, def int64, at time.Time) (bool, error) {
	return queryValue[bool](s.t, `SELECT EXISTS (SELECT FROM alarm_triples
		WHERE imei = $1 AND definition_id = $2 AND created_at = $3)`, imei, def, at.Truncate(time.Millisecond))
}

// loadAlarmNotes reads the comments and actions of list's alarms, each
// list in id order (the order the store appends them in), in one
// statement. An alarm without any has empty, non-nil lists.
func loadAlarmNotes(t *tx, list []store.Alarm) error {
	if len(list) == 0 {
		return nil
	}
	at := make(map[int64]*store.Alarm, len(list))
	ids := make([]int64, len(list))
	for i := range list {
		a := &list[i]
		a.Comments, a.Actions = []store.AlarmComment{}, []store.AlarmAction{}
		at[a.ID], ids[i] = a, a.ID
	}
	rows, err := t.pg.Query(t.ctx, `SELECT `+noteColumns+` FROM alarm_notes WHERE alarm_id = ANY ($1) ORDER BY alarm_id, id`, ids)
	if err != nil {
		return classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id, alarmID, by                int64
			kind, audience                 string
			action, details, commentorName pgtype.Text
			created, updated               time.Time
		)
		err := rows.Scan(&id, &alarmID, &kind, &action, &details, &commentorName, &audience, zeroID{&by},
			zeroTime{&created}, zeroTime{&updated})
		if err != nil {
			return classify(err)
		}
		a := at[alarmID]
		if kind == "comment" {
			a.Comments = append(a.Comments, store.AlarmComment{ID: id, AlarmID: alarmID, Details: details.String,
				CreatedByAudienceName: audience, CreatedByID: by, CommentorName: commentorName.String, CreatedAt: created})
		} else {
			a.Actions = append(a.Actions, store.AlarmAction{ID: id, AlarmID: alarmID, Type: action.String,
				CreatedByAudienceName: audience, CreatedByID: by, CreatedAt: created, UpdatedAt: updated})
		}
	}
	return classify(rows.Err())
}

// Purge implements store.AlarmSet: one statement deletes, in id order from
// the resume position, the first p.Limit closed alarms created before
// their organization's cutoff; their notes and open records go with them,
// their triples stay. The resume position is the id after the last alarm
// deleted (8 bytes, big-endian), nil when the batch deleted fewer than
// p.Limit; a Limit of 0 or less deletes every due alarm at once.
func (s alarms) Purge(p store.AlarmPurge) (int, []byte, error) {
	if p.From != nil && len(p.From) != 8 {
		return 0, nil, fmt.Errorf("store: alarm purge position %x: %w", p.From, store.ErrInvalid)
	}
	s.t.memo.open = nil // their open records go by cascade
	return purgeByCutoffs(s.t, `DELETE FROM alarms WHERE id IN (
			SELECT a.id FROM alarms a
			JOIN unnest($1::bigint[], $2::timestamptz[]) AS c (organization_id, cutoff) USING (organization_id)
			WHERE a.id >= $3 AND NOT a.is_open AND a.created_at < $4 AND a.created_at < c.cutoff
			ORDER BY a.id LIMIT $5)
		RETURNING id`, p.Cutoffs, p.From, p.Limit)
}
