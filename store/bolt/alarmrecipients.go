package bolt

import (
	"github.com/fleetcam/fleetcam/store"
)

// alarmRecipients is the alarm recipient set of a transaction: bucket
// alarm_recipients maps each id to the recipient as JSON, its sequence
// giving the ids.
type alarmRecipients struct{ t *tx }

// AlarmRecipients implements store.AlarmRecords.
func (t *tx) AlarmRecipients() store.AlarmRecipientSet { return alarmRecipients{t} }

// Get implements store.AlarmRecipientSet.
func (s alarmRecipients) Get(id int64) (*store.AlarmRecipient, error) {
	return lookupJSON(s.t.bucket(bucketRecipients), itob(id), store.AlarmRecipient{})
}

// Insert implements store.AlarmRecipientSet.
func (s alarmRecipients) Insert(r *store.AlarmRecipient) error {
	if err := s.t.drawID(bucketRecipients, &r.ID); err != nil {
		return err
	}
	return s.put(r)
}

// Put implements store.AlarmRecipientSet.
func (s alarmRecipients) Put(r *store.AlarmRecipient) error {
	return replaceJSON(s.t.bucket(bucketRecipients), itob(r.ID), r, "alarm recipient %d", r.ID)
}

// put stores r under its id.
func (s alarmRecipients) put(r *store.AlarmRecipient) error {
	return putJSON(s.t.bucket(bucketRecipients), itob(r.ID), r)
}

// Delete implements store.AlarmRecipientSet.
func (s alarmRecipients) Delete(id int64) error {
	return s.t.bucket(bucketRecipients).Delete(itob(id))
}

// List implements store.AlarmRecipientSet.
func (s alarmRecipients) List() ([]store.AlarmRecipient, error) {
	return listJSON[store.AlarmRecipient](s.t.bucket(bucketRecipients), nil, nil)
}
