package postgres

import (
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// EventDeviceIDs implements store.EventRecords.
func (t *tx) EventDeviceIDs() store.EventDeviceIDSet { return eventDeviceIDs{t} }

// eventDeviceIDs is store.EventDeviceIDSet over the event_device_ids
// table, keyed by device and the device's own event id.
type eventDeviceIDs struct{ t *tx }

// errNoEventDeviceID is what Get returns for an id never stored, which is
// what most ingested events find: one value, not one per event.
var errNoEventDeviceID = store.NotFound("device event id")

// Get implements store.EventDeviceIDSet.
func (s eventDeviceIDs) Get(imei, deviceEventID string) (store.EventDeviceID, error) {
	if b := s.t.bulk; b != nil {
		r, ok, err := b.deviceID(imei, deviceEventID)
		if err == nil && !ok {
			err = errNoEventDeviceID
		}
		return r, err
	}
	return s.get(imei, deviceEventID)
}

// get reads imei's device event id deviceEventID.
func (s eventDeviceIDs) get(imei, deviceEventID string) (store.EventDeviceID, error) {
	r := store.EventDeviceID{IMEI: imei, DeviceEventID: deviceEventID}
	err := s.t.pg.QueryRow(s.t.ctx, `SELECT event_id, ownership FROM event_device_ids
		WHERE imei = $1 AND device_event_id = $2`, imei, deviceEventID).Scan(&r.EventID, &r.Ownership)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.EventDeviceID{}, errNoEventDeviceID
	}
	if err != nil {
		return store.EventDeviceID{}, classify(err)
	}
	return r, nil
}

// Put implements store.EventDeviceIDSet.
func (s eventDeviceIDs) Put(r store.EventDeviceID) error {
	if b := s.t.bulk; b != nil {
		return b.putDeviceID(r)
	}
	return s.upsert(r)
}

// upsert writes r over what its device and id were stored as.
func (s eventDeviceIDs) upsert(r store.EventDeviceID) error {
	return s.t.queue(`INSERT INTO event_device_ids (`+eventDeviceIDColumns+`) VALUES ($1, $2, $3, $4)
		ON CONFLICT (imei, device_event_id) DO UPDATE SET event_id = excluded.event_id, ownership = excluded.ownership`,
		eventDeviceIDArgs(&r)...)
}

// eventDeviceIDColumns are the columns of an event_device_ids row, in
// eventDeviceIDArgs' order and eventDeviceIDFields'.
const eventDeviceIDColumns = `imei, device_event_id, event_id, ownership`

// eventDeviceIDArgs are the values of eventDeviceIDColumns for r.
func eventDeviceIDArgs(r *store.EventDeviceID) []any {
	return []any{r.IMEI, r.DeviceEventID, r.EventID, r.Ownership}
}

// eventDeviceIDFields are the scan targets of eventDeviceIDColumns in r.
func eventDeviceIDFields(r *store.EventDeviceID) []any {
	return []any{&r.IMEI, &r.DeviceEventID, &r.EventID, &r.Ownership}
}
