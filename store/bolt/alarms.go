package bolt

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// alarms is the alarm set of a transaction. Bucket alarms maps each id to
// the alarm as JSON, its sequence giving the ids; alarm_triples maps imei,
// 0, definition, createdAt (unix ms) to the id of the alarm last inserted
// with them, and keeps the entry when the alarm is purged; alarm_notes
// holds only the sequence of comment and action ids.
type alarms struct{ t *tx }

// Alarms implements store.AlarmRecords.
func (t *tx) Alarms() store.AlarmSet { return alarms{t} }

// alarmOpenKey is the key of imei and def in alarm_open: imei, 0, def.
func alarmOpenKey(imei string, def int64) []byte { return append(compositeKey(imei, ""), itob(def)...) }

// alarmTripleKey is the key of a triple in alarm_triples.
func alarmTripleKey(imei string, def int64, at time.Time) []byte {
	return append(alarmOpenKey(imei, def), itob(at.UnixMilli())...)
}

// Get implements store.AlarmSet.
func (s alarms) Get(id int64) (*store.Alarm, error) {
	return lookupJSON(s.t.bucket(bucketAlarms), itob(id), store.Alarm{})
}

// NextID implements store.AlarmSet.
func (s alarms) NextID() (int64, error) { return s.t.nextID(bucketAlarms) }

// LastID implements store.AlarmSet.
func (s alarms) LastID() (int64, error) { return int64(s.t.bucket(bucketAlarms).Sequence()), nil }

// Insert implements store.AlarmSet.
func (s alarms) Insert(a *store.Alarm) error {
	if err := putJSON(s.t.bucket(bucketAlarms), itob(a.ID), a); err != nil {
		return err
	}
	return s.putTriple(store.AlarmTriple{IMEI: a.IMEI, DefinitionID: a.AlarmDefinitionID, CreatedAt: a.CreatedAt, AlarmID: a.ID})
}

// putTriple records that tr.AlarmID was the alarm last inserted with tr's
// device, definition and createdAt.
func (s alarms) putTriple(tr store.AlarmTriple) error {
	return s.t.bucket(bucketAlarmTriples).Put(alarmTripleKey(tr.IMEI, tr.DefinitionID, tr.CreatedAt), itob(tr.AlarmID))
}

// Put implements store.AlarmSet.
func (s alarms) Put(a *store.Alarm) error {
	return replaceJSON(s.t.bucket(bucketAlarms), itob(a.ID), a, "alarm %d", a.ID)
}

// TripleTaken implements store.AlarmSet.
func (s alarms) TripleTaken(imei string, def int64, at time.Time) (bool, error) {
	return s.t.bucket(bucketAlarmTriples).Get(alarmTripleKey(imei, def, at)) != nil, nil
}

// NextNoteID implements store.AlarmSet.
func (s alarms) NextNoteID() (int64, error) { return s.t.nextID(bucketAlarmNotes) }

// List implements store.AlarmSet: it reads every alarm after f.AfterID,
// in id order, keeps those f matches and sorts them.
func (s alarms) List(f store.AlarmFilter, o store.Sort, p store.Page, names store.AlarmNames) ([]store.Alarm, int, error) {
	order, err := store.AlarmOrder(o, names)
	if err != nil {
		return nil, 0, err
	}
	var all []store.Alarm
	c := s.t.bucket(bucketAlarms).Cursor()
	for k, v := c.Seek(itob(f.AfterID + 1)); k != nil; k, v = c.Next() {
		var a store.Alarm
		if err := decodeAlarm(k, v, &a); err != nil {
			return nil, 0, err
		}
		if f.Match(&a, names) {
			all = append(all, a)
		}
	}
	slices.SortFunc(all, func(a, b store.Alarm) int { return order(&a, &b) })
	page, total := store.Paginate(all, p)
	return page, total, nil
}

// Purge implements store.AlarmSet: it walks the alarms in id order; the
// resume position is the key of the first alarm the batch did not reach.
func (s alarms) Purge(p store.AlarmPurge) (int, []byte, error) {
	return purgeFrom(s.t.bucket(bucketAlarms), p.From, p.Limit, func(k, v []byte) (bool, bool, error) {
		var a store.Alarm
		err := decodeAlarm(k, v, &a)
		return err == nil && p.Due(&a), true, err
	})
}

// decodeAlarm decodes the alarm v stored at key k.
func decodeAlarm(k, v []byte, a *store.Alarm) error {
	if err := json.Unmarshal(v, a); err != nil {
		return fmt.Errorf("store: decode alarm %d: %w", btoi(k), err)
	}
	return nil
}

// openAlarms is the open-alarm set of a transaction: bucket alarm_open
// maps imei, 0, definition to the id of the open system alarm.
type openAlarms struct{ t *tx }

// OpenAlarms implements store.AlarmRecords.
func (t *tx) OpenAlarms() store.OpenAlarmSet { return openAlarms{t} }

// Get implements store.OpenAlarmSet.
func (s openAlarms) Get(imei string, def int64) (int64, error) {
	v := s.t.bucket(bucketAlarmOpen).Get(alarmOpenKey(imei, def))
	if v == nil {
		return 0, nil
	}
	return btoi(v), nil
}

// Put implements store.OpenAlarmSet.
func (s openAlarms) Put(imei string, def int64, id int64) error {
	return s.t.bucket(bucketAlarmOpen).Put(alarmOpenKey(imei, def), itob(id))
}

// Delete implements store.OpenAlarmSet.
func (s openAlarms) Delete(imei string, def int64) error {
	return s.t.bucket(bucketAlarmOpen).Delete(alarmOpenKey(imei, def))
}

// DeleteDevice implements store.OpenAlarmSet.
func (s openAlarms) DeleteDevice(imei string) error {
	return deletePrefix(s.t.bucket(bucketAlarmOpen), compositeKey(imei, ""))
}
