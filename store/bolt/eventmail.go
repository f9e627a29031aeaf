package bolt

import (
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// eventMails are the event_mail records: JSON under event id (8 bytes), 0,
// recipient, so the queue is in event order. The queue is short (jobs are
// deleted once sent), so Due scans it.
type eventMails struct{ t *tx }

// EventMails implements store.EventRecords.
func (t *tx) EventMails() store.EventMailSet { return eventMails{t} }

func eventMailKey(eventID int64, recipient string) []byte { return compositeKey(eventID, recipient) }

// Put implements store.EventMailSet.
func (r eventMails) Put(m *store.EventMail) error {
	return putJSON(r.t.bucket(bucketEventMail), eventMailKey(m.EventID, m.Recipient), m)
}

// Due implements store.EventMailSet.
func (r eventMails) Due(now time.Time, limit int) ([]store.EventMail, error) {
	var out []store.EventMail
	err := eachJSON(r.t.bucket(bucketEventMail), nil, func(_ []byte, m *store.EventMail) (bool, error) {
		if limit > 0 && len(out) >= limit {
			return false, nil
		}
		if !m.NextAttemptAt.After(now) {
			out = append(out, *m)
		}
		return true, nil
	})
	return out, err
}

// List implements store.EventMailSet.
func (r eventMails) List() ([]store.EventMail, error) {
	return listJSON[store.EventMail](r.t.bucket(bucketEventMail), nil, nil)
}

// Delete implements store.EventMailSet.
func (r eventMails) Delete(eventID int64, recipient string) error {
	return r.t.bucket(bucketEventMail).Delete(eventMailKey(eventID, recipient))
}
