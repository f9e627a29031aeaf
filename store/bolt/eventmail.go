package bolt

import (
	"encoding/json"
	"fmt"
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
	return r.scan(func(m *store.EventMail) bool { return !m.NextAttemptAt.After(now) }, limit)
}

// List implements store.EventMailSet.
func (r eventMails) List() ([]store.EventMail, error) {
	return r.scan(func(*store.EventMail) bool { return true }, 0)
}

// Delete implements store.EventMailSet.
func (r eventMails) Delete(eventID int64, recipient string) error {
	return r.t.bucket(bucketEventMail).Delete(eventMailKey(eventID, recipient))
}

// scan returns up to limit (0: all) jobs keep keeps, in key order.
func (r eventMails) scan(keep func(*store.EventMail) bool, limit int) ([]store.EventMail, error) {
	var out []store.EventMail
	c := r.t.bucket(bucketEventMail).Cursor()
	for k, v := c.First(); k != nil && (limit == 0 || len(out) < limit); k, v = c.Next() {
		var m store.EventMail
		if err := json.Unmarshal(v, &m); err != nil {
			return nil, fmt.Errorf("store: decode %x: %w", k, err)
		}
		if keep(&m) {
			out = append(out, m)
		}
	}
	return out, nil
}
