package postgres

import (
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// devices are the devices table: the inventory, by IMEI.
type devices struct{ t *tx }

// Devices implements store.DirectoryRecords.
func (t *tx) Devices() store.DeviceRecords { return devices{t} }

// deviceColumns are the columns deviceFields scans.
const deviceColumns = `imei, name, organization_id, partner_id, group_id, status, product_type, data_profile_id,
	created_at, activated_at, ownership, previous_owner_until`

// deviceFields are the scan targets of deviceColumns in d.
func deviceFields(d *store.Device) []any {
	return []any{&d.IMEI, &d.Name, &d.OrganizationID, &d.PartnerID, zeroID{&d.GroupID}, &d.Status, &d.ProductType,
		&d.DataProfileID, zeroTime{&d.CreatedAt}, zeroTime{&d.ActivatedAt}, &d.Ownership,
		zeroTime{&d.PreviousOwnerUntil}}
}

// deviceMemoColumns are the columns of a device's row the memo keeps:
// those of the device and its revision (Stamp).
const deviceMemoColumns = deviceColumns + `, revision`

// getDeviceSQL reads the memo's row of the device $1.
const getDeviceSQL = `SELECT ` + deviceMemoColumns + ` FROM devices WHERE imei = $1`

// getDevice reads imei's row (deviceMemoColumns) into d and rev, once per
// transaction (memo.go).
func getDevice(t *tx, imei string, d *store.Device, rev *int64) error {
	return getMemo(t, tableDevices, imei, getDeviceSQL, append(deviceFields(d), rev), imei)
}

// Get implements store.DeviceRecords.
func (r devices) Get(imei string) (*store.Device, error) {
	var d store.Device
	var rev int64
	if err := getDevice(r.t, imei, &d, &rev); err != nil {
		return nil, err
	}
	return &d, nil
}

// Stamp implements store.DeviceRecords: the row's revision, which every
// write of it draws anew from the device_revisions sequence, so that no
// two versions of any device's row share one (not even those of an IMEI
// removed and added again). It is read with the row, once per transaction.
func (r devices) Stamp(imei string) (uint64, error) {
	var d store.Device
	var rev int64
	err := getDevice(r.t, imei, &d, &rev)
	if errors.Is(err, store.ErrNotFound) {
		return 0, store.NotFound("device %s", imei)
	}
	return uint64(rev), err
}

// Insert implements store.DeviceRecords. An IMEI already stored inserts
// nothing, which leaves the transaction usable.
func (r devices) Insert(d *store.Device) error {
	r.t.forget(tableDevices, d.IMEI)
	tag, err := r.t.exec(`INSERT INTO devices (imei, name, name_folded, organization_id, partner_id, group_id,
			status, product_type, data_profile_id, created_at, activated_at, ownership, previous_owner_until)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (imei) DO NOTHING`,
		d.IMEI, d.Name, store.FoldCase(d.Name), d.OrganizationID, d.PartnerID, nullID(d.GroupID), d.Status,
		d.ProductType, d.DataProfileID, d.CreatedAt, nullTime(d.ActivatedAt), d.Ownership,
		nullTime(d.PreviousOwnerUntil))
	if err == nil && tag.RowsAffected() == 0 {
		return store.Conflict("device %s is already stored", d.IMEI)
	}
	return err
}

// Put implements store.DeviceRecords. The organization stays the one the
// device was inserted in.
//
// In a group commit that has read the row, the update is held back: it
// updates the row the transaction sees, or fails as a serialisation
// failure should another transaction have changed or removed the row
// since, so nobody needs its answer.
func (r devices) Put(d *store.Device) error {
	seen := r.t.memo.rows[memoKey{tableDevices, d.IMEI}].found
	r.t.forget(tableDevices, d.IMEI)
	const update = `UPDATE devices SET name = $2, name_folded = $3, partner_id = $4, group_id = $5,
			status = $6, product_type = $7, data_profile_id = $8, created_at = $9, activated_at = $10,
			ownership = $11, previous_owner_until = $12, revision = nextval('device_revisions')
		WHERE imei = $1`
	args := []any{d.IMEI, d.Name, store.FoldCase(d.Name), d.PartnerID, nullID(d.GroupID), d.Status, d.ProductType,
		d.DataProfileID, d.CreatedAt, nullTime(d.ActivatedAt), d.Ownership, nullTime(d.PreviousOwnerUntil)}
	if p := groupPipe(r.t); p != nil && seen {
		return p.queueMerged(&argsRow{of: deviceUpdateKind, id: d.IMEI, args: args}, update, args...)
	}
	tag, err := r.t.exec(update, args...)
	if err == nil && tag.RowsAffected() == 0 {
		return store.NotFound("device %s", d.IMEI)
	}
	return err
}

// deviceUpdateKind merges the queued updates of device rows (Put's
// arguments); a row is the device's.
var deviceUpdateKind = &mergeKind{
	sql: `UPDATE devices d SET name = u.name, name_folded = u.folded, partner_id = u.partner, group_id = u.grp,
		status = u.status, product_type = u.product, data_profile_id = u.profile, created_at = u.created,
		activated_at = u.activated, ownership = u.ownership, previous_owner_until = u.previous,
		revision = nextval('device_revisions')
	  FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::text[], $8::bigint[],
		$9::timestamptz[], $10::timestamptz[], $11::bigint[], $12::timestamptz[])
		AS u (imei, name, folded, partner, grp, status, product, profile, created, activated, ownership, previous)
	 WHERE d.imei = u.imei`,
	args: func(all []mergeable) []any {
		return []any{column[string](all, 0), column[string](all, 1), column[string](all, 2), column[int64](all, 3),
			column[pgtype.Int8](all, 4), column[string](all, 5), column[string](all, 6), column[int64](all, 7),
			column[time.Time](all, 8), column[pgtype.Timestamptz](all, 9), column[int64](all, 10),
			column[pgtype.Timestamptz](all, 11)}
	}}

// Delete implements store.DeviceRecords.
func (r devices) Delete(imei string) error {
	r.t.forgetDevice(imei)
	tag, err := r.t.exec(`DELETE FROM devices WHERE imei = $1`, imei)
	return affected(tag, err, "device %s", imei)
}

// List implements store.DeviceRecords: DeviceFilter.Match as a WHERE
// clause. The name matches as a substring of name_folded, the name's
// store.FoldCase key, as Match compares them.
func (r devices) List(f store.DeviceFilter, p store.Page) ([]store.Device, int, error) {
	var w where
	if f.OrganizationID != 0 {
		w.and("organization_id = " + w.arg(f.OrganizationID))
	}
	if f.PartnerID != 0 {
		w.and("partner_id = " + w.arg(f.PartnerID))
	}
	if f.GroupID != 0 {
		w.and("group_id = " + w.arg(f.GroupID))
	}
	if f.IMEI != "" {
		w.and("imei = " + w.arg(f.IMEI))
	}
	if f.Name != "" {
		w.and("strpos(name_folded, " + w.arg(store.FoldCase(f.Name)) + ") > 0")
	}
	if f.IMEIs != nil {
		w.and("imei = ANY (" + w.arg(trueKeys(f.IMEIs)) + ")")
	}
	return listPage(r.t, deviceColumns, "devices", &w, "imei", p, deviceFields)
}

// OrganizationIMEIs implements store.DeviceRecords.
func (r devices) OrganizationIMEIs(orgID int64) ([]string, error) {
	return collect(r.t, pgx.RowTo[string], `SELECT imei FROM devices WHERE organization_id = $1 ORDER BY imei`, orgID)
}
