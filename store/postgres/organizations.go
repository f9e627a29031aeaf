package postgres

import (
	"slices"
	"strconv"

	"github.com/fleetcam/fleetcam/store"
)

// organizations are the organizations table, with the partners each
// admits (organization_partners) and invites (organization_invitations),
// both in the order of the record's lists.
type organizations struct{ t *tx }

// Organizations implements store.DirectoryRecords.
func (t *tx) Organizations() store.OrganizationRecords { return organizations{t} }

// organizationColumns are the columns organizationFields scans, of the
// organizations table named o.
const organizationColumns = `o.id, o.name, o.partner_id,
	(SELECT array_agg(p.partner_id ORDER BY p.position) FROM organization_partners p WHERE p.organization_id = o.id),
	(SELECT array_agg(i.partner_id ORDER BY i.position) FROM organization_invitations i WHERE i.organization_id = o.id),
	o.is_organization_profile_enabled, o.exclusive_partner_only, o.sso_salt,
	o.purge_days, o.purge_days_front_camera, o.purge_days_rear_camera, o.purge_days_auxiliary_cameras,
	o.device_retention_minutes, o.live_video_timeout_seconds, o.default_data_profile_id, o.created_at,
	o.deleted_at`

// organizationFields are the scan targets of organizationColumns in o. A
// list without partners is NULL, and nil in o.
func organizationFields(o *store.Organization) []any {
	return []any{&o.ID, &o.Name, &o.PartnerID, &o.PartnerIDs, &o.InvitedPartnerIDs,
		&o.IsOrganizationProfileEnabled, &o.ExclusivePartnerOnly, &o.SSOSalt,
		&o.Retention.PurgeDays, &o.Retention.PurgeDaysFrontCamera, &o.Retention.PurgeDaysRearCamera,
		&o.Retention.PurgeDaysAuxiliaryCameras, &o.Retention.DeviceRetentionMinutes,
		&o.LiveVideoTimeoutSeconds, &o.DefaultDataProfileID, zeroTime{&o.CreatedAt}, zeroTime{&o.DeletedAt}}
}

// getOrganizationSQL reads the memo's row of the organization $1.
const getOrganizationSQL = `SELECT ` + organizationColumns + ` FROM organizations o WHERE o.id = $1`

// Get implements store.OrganizationRecords.
func (r organizations) Get(id int64) (*store.Organization, error) {
	var o store.Organization
	err := getMemo(r.t, tableOrganizations, strconv.FormatInt(id, 10), getOrganizationSQL, organizationFields(&o), id)
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// Insert implements store.OrganizationRecords: ids are the table's
// identity. One statement inserts the organization and its lists.
func (r organizations) Insert(o *store.Organization) error {
	return getOne(r.t, `WITH o AS (
			INSERT INTO organizations (name, partner_id, is_organization_profile_enabled, exclusive_partner_only,
				sso_salt, purge_days, purge_days_front_camera, purge_days_rear_camera, purge_days_auxiliary_cameras,
				device_retention_minutes, live_video_timeout_seconds, default_data_profile_id, created_at, deleted_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $16)
			RETURNING id
		), admitted AS (
			INSERT INTO organization_partners (organization_id, partner_id, position)
			SELECT o.id, l.partner_id, l.position FROM o, unnest($14::bigint[]) WITH ORDINALITY l(partner_id, position)
		), invited AS (
			INSERT INTO organization_invitations (organization_id, partner_id, position)
			SELECT o.id, l.partner_id, l.position FROM o, unnest($15::bigint[]) WITH ORDINALITY l(partner_id, position)
		)
		SELECT id FROM o`, []any{&o.ID}, organizationArgs(o)...)
}

// Put implements store.OrganizationRecords: one statement updates the
// organization and replaces its lists (the partners that stay keep their
// rows); ErrNotFound when there is no organization o.ID.
func (r organizations) Put(o *store.Organization) error {
	r.t.forget(tableOrganizations, strconv.FormatInt(o.ID, 10))
	var id int64
	err := getOne(r.t, `WITH o AS (
			UPDATE organizations SET name = $2, partner_id = $3, is_organization_profile_enabled = $4,
				exclusive_partner_only = $5, sso_salt = $6, purge_days = $7, purge_days_front_camera = $8,
				purge_days_rear_camera = $9, purge_days_auxiliary_cameras = $10, device_retention_minutes = $11,
				live_video_timeout_seconds = $12, default_data_profile_id = $13, created_at = $14, deleted_at = $17
			WHERE id = $1
			RETURNING id
		), unadmitted AS (
			DELETE FROM organization_partners WHERE organization_id = $1 AND partner_id <> ALL ($15::bigint[])
		), admitted AS (
			INSERT INTO organization_partners (organization_id, partner_id, position)
			SELECT o.id, l.partner_id, l.position FROM o, unnest($15::bigint[]) WITH ORDINALITY l(partner_id, position)
			ON CONFLICT (organization_id, partner_id) DO UPDATE SET position = EXCLUDED.position
		), uninvited AS (
			DELETE FROM organization_invitations WHERE organization_id = $1 AND partner_id <> ALL ($16::bigint[])
		), invited AS (
			INSERT INTO organization_invitations (organization_id, partner_id, position)
			SELECT o.id, l.partner_id, l.position FROM o, unnest($16::bigint[]) WITH ORDINALITY l(partner_id, position)
			ON CONFLICT (organization_id, partner_id) DO UPDATE SET position = EXCLUDED.position
		)
		SELECT id FROM o`, []any{&id}, append([]any{o.ID}, organizationArgs(o)...)...)
	return store.NotFoundAs(err, "organization %d", o.ID)
}

// List implements store.OrganizationRecords: OrganizationFilter.Match as
// a WHERE clause. A partner holds devices in the organizations it created
// and in those that admit it, each found by its index.
func (r organizations) List(f store.OrganizationFilter, p store.Page) ([]store.Organization, int, error) {
	var w where
	if !f.WithDeleted {
		w.and("o.deleted_at IS NULL")
	}
	if f.IDs != nil {
		w.and("o.id = ANY (" + w.arg(trueKeys(f.IDs)) + ")")
	}
	if f.PartnerID != 0 {
		id := w.arg(f.PartnerID)
		w.and("o.id IN (SELECT id FROM organizations WHERE partner_id = " + id +
			" UNION SELECT organization_id FROM organization_partners WHERE partner_id = " + id + ")")
	}
	if f.InvitedPartnerID != 0 {
		w.and("o.id IN (SELECT organization_id FROM organization_invitations WHERE partner_id = " +
			w.arg(f.InvitedPartnerID) + ")")
	}
	return listPage(r.t, organizationColumns, "organizations o", &w, "o.id", p, organizationFields)
}

// organizationArgs are the parameters of Insert for o, and those of Put
// after the id: the columns of organizations, then the partners admitted
// and those invited, then deleted_at.
func organizationArgs(o *store.Organization) []any {
	return []any{o.Name, o.PartnerID, o.IsOrganizationProfileEnabled, o.ExclusivePartnerOnly, o.SSOSalt,
		o.Retention.PurgeDays, o.Retention.PurgeDaysFrontCamera, o.Retention.PurgeDaysRearCamera,
		o.Retention.PurgeDaysAuxiliaryCameras, o.Retention.DeviceRetentionMinutes,
		o.LiveVideoTimeoutSeconds, o.DefaultDataProfileID, o.CreatedAt,
		uniqueIDs(o.PartnerIDs), uniqueIDs(o.InvitedPartnerIDs), nullTime(o.DeletedAt)}
}

// uniqueIDs is ids without repetitions, in the order each first appears:
// a partner is admitted, or invited, once.
func uniqueIDs(ids []int64) []int64 {
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
