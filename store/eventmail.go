package store

import (
	"time"
)

// Event notification e-mails. When an event the API reports is stored and
// its device has recipients of its type (eventrecipients.go), one job per
// recipient is queued in the same transaction, so an event is never stored
// without its e-mails nor the other way round. The mailer
// (cloudapi/eventmail) sends each job outside any transaction and deletes
// it once sent; a failed send is tried again with a growing pause and
// given up a day after the job was queued.

// EventMail is one queued e-mail: recipient is to be told of the event.
type EventMail struct {
	EventID   int64  `json:"eventId"`
	Recipient string `json:"recipient"`
	IMEI      string `json:"imei"`
	// QueuedAt is when the event was stored; the job is given up a day later.
	QueuedAt time.Time `json:"queuedAt"`
	// Attempts counts the failed sends so far.
	Attempts int `json:"attempts,omitempty"`
	// NextAttemptAt is when the job is due (QueuedAt at first).
	NextAttemptAt time.Time `json:"nextAttemptAt"`
}

// Retry bounds of event e-mails: the pause after the n-th failure is
// EventMailRetryMin·2ⁿ⁻¹, at most EventMailRetryMax; a job is given up
// EventMailGiveUp after it was queued.
const (
	EventMailRetryMin = time.Minute
	EventMailRetryMax = time.Hour
	EventMailGiveUp   = 24 * time.Hour
)

// queueEventMail queues one e-mail per recipient of e's type on its device
// (eff are the device's effective settings).
func (tx *Tx) queueEventMail(e *Event, eff *Effective) error {
	for _, to := range eff.NotificationRecipients[e.Type] {
		m := &EventMail{EventID: e.ID, Recipient: to, IMEI: e.IMEI, QueuedAt: tx.now, NextAttemptAt: tx.now}
		if err := tx.rec.EventMails().Put(m); err != nil {
			return err
		}
	}
	return nil
}

// DueEventMail returns up to limit queued e-mails due now, oldest event first.
func (tx *Tx) DueEventMail(limit int) ([]EventMail, error) {
	return tx.rec.EventMails().Due(tx.now, limit)
}

// QueuedEventMail returns every queued e-mail, oldest event first.
func (tx *Tx) QueuedEventMail() ([]EventMail, error) { return tx.rec.EventMails().List() }

// EventMailDone removes a job: sent, or not to be sent.
func (tx *Tx) EventMailDone(m EventMail) error {
	return tx.rec.EventMails().Delete(m.EventID, m.Recipient)
}

// EventMailFailed records a failed send of m: the job is due again after
// the next pause, or removed when it was queued EventMailGiveUp ago or
// more, which it reports.
func (tx *Tx) EventMailFailed(m EventMail) (gaveUp bool, err error) {
	if !tx.now.Before(m.QueuedAt.Add(EventMailGiveUp)) {
		return true, tx.EventMailDone(m)
	}
	m.Attempts++
	pause := EventMailRetryMax
	if m.Attempts <= 10 {
		pause = min(EventMailRetryMin<<(m.Attempts-1), EventMailRetryMax)
	}
	m.NextAttemptAt = tx.now.Add(pause)
	return false, tx.rec.EventMails().Put(&m)
}
