package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// Events are kept as JSON by id, with two time-ordered indexes that an
// event page walks instead of scanning the events:
//
//	events            id(8)                       →  event
//	device_events     imei 0x00 unix-ms(8) id(8)  →  event type [0x00 ownership(8)]
//	org_events        org(8) unix-ms(8) id(8)     →  partner(8) imei 0x00 event type
//	event_device_ids  imei 0x00 device's event id →  id(8) [ownership(8)]
//	event_comments    no keys: its sequence numbers the comments, which
//	                  are kept in their event
//
// The index values carry what the filters need (type, ownership, partner,
// device), so a query counts its matches from the index alone and decodes
// only the records of the requested page. A device_events or
// event_device_ids value without an ownership is of an event recorded
// before ownership numbers existed. The organization index also has hourly
// counts (eventcounts.go).

// Events implements store.EventRecords.
func (t *tx) Events() store.EventSet { return events{t} }

// EventDeviceIDs implements store.EventRecords.
func (t *tx) EventDeviceIDs() store.EventDeviceIDSet { return eventDeviceIDs{t} }

// events is store.EventSet over the events bucket and its indexes.
type events struct{ t *tx }

func deviceEventPrefix(imei string) []byte { return append([]byte(imei), 0) }

func deviceEventKey(imei string, t time.Time, id int64) []byte {
	return append(append(deviceEventPrefix(imei), itob(max(t.UnixMilli(), 0))...), itob(id)...)
}

func orgEventKey(org int64, t time.Time, id int64) []byte {
	return append(append(itob(org), itob(max(t.UnixMilli(), 0))...), itob(id)...)
}

func deviceEventValue(e *store.Event) []byte {
	if e.Ownership == 0 {
		return []byte(e.Type)
	}
	return append(append([]byte(e.Type), 0), itob(e.Ownership)...)
}

// splitDeviceEventValue returns the event type and ownership of a
// device_events value.
func splitDeviceEventValue(v []byte) (typ []byte, ownership int64) {
	typ, own, found := bytes.Cut(v, []byte{0})
	if found && len(own) == 8 {
		ownership = btoi(own)
	}
	return typ, ownership
}

func orgEventValue(e *store.Event) []byte {
	v := append(itob(e.PartnerID), e.IMEI...)
	return append(append(v, 0), e.Type...)
}

// Get implements store.EventSet.
func (s events) Get(id int64) (*store.Event, error) {
	var e store.Event
	if err := getJSON(s.t.bucket(bucketEvents), itob(id), &e); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, store.NotFound("event %d", id)
		}
		return nil, fmt.Errorf("event %d: %w", id, err)
	}
	return &e, nil
}

// Insert implements store.EventSet: the record, both indexes and the
// hourly count.
func (s events) Insert(e *store.Event) error {
	if err := s.t.drawID(bucketEvents, &e.ID); err != nil {
		return err
	}
	return s.put(e)
}

// put stores the new event e under its id, with both index entries and
// its hourly count.
func (s events) put(e *store.Event) error {
	if err := putJSON(s.t.bucket(bucketEvents), itob(e.ID), e); err != nil {
		return err
	}
	if err := s.t.bucket(bucketDeviceEvents).Put(deviceEventKey(e.IMEI, e.Time, e.ID), deviceEventValue(e)); err != nil {
		return err
	}
	if err := s.t.bucket(bucketOrgEvents).Put(orgEventKey(e.OrganizationID, e.Time, e.ID), orgEventValue(e)); err != nil {
		return err
	}
	return s.t.countEventHour(e, 1)
}

// Update implements store.EventSet: the indexes stay as they are.
func (s events) Update(e *store.Event) error {
	b := s.t.bucket(bucketEvents)
	if b.Get(itob(e.ID)) == nil {
		return store.NotFound("event %d", e.ID)
	}
	return putJSON(b, itob(e.ID), e)
}

// Delete implements store.EventSet. The hourly count goes down only with
// an organization index entry that was there.
func (s events) Delete(e *store.Event) error {
	if err := s.t.bucket(bucketEvents).Delete(itob(e.ID)); err != nil {
		return err
	}
	if err := s.t.bucket(bucketDeviceEvents).Delete(deviceEventKey(e.IMEI, e.Time, e.ID)); err != nil {
		return err
	}
	org := s.t.bucket(bucketOrgEvents)
	k := orgEventKey(e.OrganizationID, e.Time, e.ID)
	if org.Get(k) == nil {
		return nil
	}
	if err := org.Delete(k); err != nil {
		return err
	}
	return s.t.countEventHour(e, -1)
}

// NextCommentID implements store.EventSet: the comments' own sequence.
func (s events) NextCommentID() (int64, error) { return s.t.nextID(bucketEventComments) }

// ByOrganizationBefore implements store.EventSet, from the organization
// index.
func (s events) ByOrganizationBefore(org int64, before time.Time, limit int) ([]store.Event, error) {
	var ids []int64
	prefix := itob(org)
	stop := orgEventKey(org, before, 0)
	c := s.t.bucket(bucketOrgEvents).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && bytes.Compare(k, stop) < 0 && len(ids) < limit; k, _ = c.Next() {
		ids = append(ids, btoi(k[len(k)-8:]))
	}
	out := make([]store.Event, 0, len(ids))
	for _, id := range ids {
		e, err := s.Get(id)
		if err != nil {
			return nil, err
		}
		out = append(out, *e)
	}
	return out, nil
}

// eventDeviceIDs is store.EventDeviceIDSet over event_device_ids.
type eventDeviceIDs struct{ t *tx }

// errNoEventDeviceID is what Get returns for an id never stored, which is
// what most ingested events find: one value, not one per event.
var errNoEventDeviceID = store.NotFound("device event id")

// eventDeviceIDKey is the event_device_ids key of a device's event id,
// built in one allocation: ingest builds it twice for every event.
func eventDeviceIDKey(imei, deviceEventID string) []byte {
	k := make([]byte, 0, len(imei)+1+len(deviceEventID))
	return append(append(append(k, imei...), 0), deviceEventID...)
}

// Get implements store.EventDeviceIDSet.
func (s eventDeviceIDs) Get(imei, deviceEventID string) (store.EventDeviceID, error) {
	v := s.t.bucket(bucketEventDeviceIDs).Get(eventDeviceIDKey(imei, deviceEventID))
	if len(v) < 8 {
		return store.EventDeviceID{}, errNoEventDeviceID
	}
	return decodeEventDeviceID(imei, deviceEventID, v), nil
}

// decodeEventDeviceID reads v, the value of imei's device event id
// deviceEventID, which is at least 8 bytes long.
func decodeEventDeviceID(imei, deviceEventID string, v []byte) store.EventDeviceID {
	r := store.EventDeviceID{IMEI: imei, DeviceEventID: deviceEventID, EventID: btoi(v[:8])}
	if len(v) >= 16 {
		r.Ownership = btoi(v[8:16])
	}
	return r
}

// Put implements store.EventDeviceIDSet: the event id, and the ownership
// when there is one.
func (s eventDeviceIDs) Put(r store.EventDeviceID) error {
	v := make([]byte, 8, 16)
	binary.BigEndian.PutUint64(v, uint64(r.EventID))
	if r.Ownership != 0 {
		v = binary.BigEndian.AppendUint64(v, uint64(r.Ownership))
	}
	return s.t.bucket(bucketEventDeviceIDs).Put(eventDeviceIDKey(r.IMEI, r.DeviceEventID), v)
}
