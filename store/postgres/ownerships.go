package postgres

import (
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// deviceOwnerships are the device_ownerships table: the ownership log, by
// IMEI and number. The numbers are the table's identity, one sequence for
// every IMEI.
type deviceOwnerships struct{ t *tx }

// DeviceOwnerships implements store.DirectoryRecords.
func (t *tx) DeviceOwnerships() store.DeviceOwnershipRecords { return deviceOwnerships{t} }

// ownershipColumns are the columns ownershipFields scans.
const ownershipColumns = `imei, ownership, organization_id, ended_at`

// ownershipFields are the scan targets of ownershipColumns in o.
func ownershipFields(o *store.DeviceOwnership) []any {
	return []any{&o.IMEI, &o.Ownership, &o.OrganizationID, zeroTime{&o.EndedAt}}
}

// endedAt is the end of an ownership as the log keeps it: to the
// millisecond.
func endedAt(t time.Time) any { return nullTime(t.Truncate(time.Millisecond)) }

// Insert implements store.DeviceOwnershipRecords.
func (r deviceOwnerships) Insert(o *store.DeviceOwnership) error {
	return getOne(r.t, `INSERT INTO device_ownerships (imei, organization_id, ended_at) VALUES ($1, $2, $3)
		RETURNING ownership`, []any{&o.Ownership}, o.IMEI, o.OrganizationID, endedAt(o.EndedAt))
}

// Put implements store.DeviceOwnershipRecords.
func (r deviceOwnerships) Put(o *store.DeviceOwnership) error {
	_, err := r.t.exec(`INSERT INTO device_ownerships (imei, ownership, organization_id, ended_at)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (imei, ownership) DO UPDATE SET organization_id = EXCLUDED.organization_id,
			ended_at = EXCLUDED.ended_at`,
		o.IMEI, o.Ownership, o.OrganizationID, endedAt(o.EndedAt))
	return err
}

// Last implements store.DeviceOwnershipRecords.
func (r deviceOwnerships) Last(imei string) (*store.DeviceOwnership, error) {
	var o store.DeviceOwnership
	err := getOne(r.t, `SELECT `+ownershipColumns+` FROM device_ownerships WHERE imei = $1
		ORDER BY ownership DESC LIMIT 1`, ownershipFields(&o), imei)
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// List implements store.DeviceOwnershipRecords.
func (r deviceOwnerships) List(imei string) ([]store.DeviceOwnership, error) {
	return collect(r.t, scanFields(ownershipFields), `SELECT `+ownershipColumns+` FROM device_ownerships WHERE imei = $1
		ORDER BY ownership`, imei)
}
