package postgres

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// eventMails are the event_mail rows: the queue of event notification
// e-mails, keyed by event id and recipient.
type eventMails struct{ t *tx }

// EventMails implements store.EventRecords.
func (t *tx) EventMails() store.EventMailSet { return eventMails{t} }

// eventMailColumns are the columns scanEventMail reads.
const eventMailColumns = `event_id, recipient, imei, queued_at, attempts, next_attempt_at`

func scanEventMail(row pgx.CollectableRow) (store.EventMail, error) {
	var m store.EventMail
	err := row.Scan(&m.EventID, &m.Recipient, &m.IMEI, &m.QueuedAt, &m.Attempts, &m.NextAttemptAt)
	m.QueuedAt, m.NextAttemptAt = m.QueuedAt.UTC(), m.NextAttemptAt.UTC()
	return m, err
}

// Put implements store.EventMailSet.
func (r eventMails) Put(m *store.EventMail) error {
	_, err := r.t.exec(`INSERT INTO event_mail (`+eventMailColumns+`) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (event_id, recipient) DO UPDATE SET imei = EXCLUDED.imei, queued_at = EXCLUDED.queued_at,
			attempts = EXCLUDED.attempts, next_attempt_at = EXCLUDED.next_attempt_at`,
		m.EventID, m.Recipient, m.IMEI, m.QueuedAt.UTC(), m.Attempts, m.NextAttemptAt.UTC())
	return err
}

// Due implements store.EventMailSet.
func (r eventMails) Due(now time.Time, limit int) ([]store.EventMail, error) {
	return collect(r.t, scanEventMail, `SELECT `+eventMailColumns+` FROM event_mail WHERE next_attempt_at <= $1
		ORDER BY event_id, recipient LIMIT $2`, now.UTC(), limitParam(limit))
}

// List implements store.EventMailSet.
func (r eventMails) List() ([]store.EventMail, error) {
	return collect(r.t, scanEventMail, `SELECT `+eventMailColumns+` FROM event_mail ORDER BY event_id, recipient`)
}

// Delete implements store.EventMailSet.
func (r eventMails) Delete(eventID int64, recipient string) error {
	_, err := r.t.exec(`DELETE FROM event_mail WHERE event_id = $1 AND recipient = $2`, eventID, recipient)
	return err
}
