package store

import "strconv"

// DeleteOrganization deletes organization id, which must hold no device
// (ErrConflict naming how many it holds). What belongs to it alone goes
// with it, each deletion audited: its users with their open tokens, its
// OAuth clients with theirs, its external users (who stay in their own
// organizations), its groups,
// drivers and alarm recipients, and the invitations of other partners to
// share it. Its record stays, marked deleted, so that the
// audit log keeps naming it and the retention purge still removes what its
// former devices recorded there as its purge days say; no call finds it
// again (Tx.Organization is ErrNotFound, Organizations leave it out), and
// its settings (device, event, privacy, webhooks) are unreachable with it.
func (tx *Tx) DeleteOrganization(id int64) (*Organization, error) {
	o, err := tx.Organization(id)
	if err != nil {
		return nil, err
	}
	imeis, err := tx.rec.Devices().OrganizationIMEIs(id)
	if err != nil {
		return nil, err
	}
	if n := len(imeis); n > 0 {
		return nil, Conflict("organization %d still holds %d device(s); remove them or move them to another organization first", id, n)
	}
	users, _, err := tx.Users(UserFilter{OrganizationID: id}, Page{})
	if err != nil {
		return nil, err
	}
	for _, u := range users {
		if err := tx.DeleteUser(u.ID); err != nil {
			return nil, err
		}
	}
	clients, err := tx.OAuthClients(OAuthClientFilter{OrganizationID: id})
	if err != nil {
		return nil, err
	}
	for _, c := range clients {
		if err := tx.DeleteOAuthClient(c.ID); err != nil {
			return nil, err
		}
	}
	externals, _, err := tx.Users(UserFilter{ExternalOrganizationID: id}, Page{})
	if err != nil {
		return nil, err
	}
	for _, u := range externals {
		if _, err := tx.RemoveExternalUser(u.ID, id); err != nil {
			return nil, err
		}
	}
	groups, _, err := tx.Groups(id, Page{})
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		if _, err := tx.DeleteGroup(g.ID); err != nil {
			return nil, err
		}
	}
	if err := tx.deleteOrgDrivers(id); err != nil {
		return nil, err
	}
	recipients, err := tx.AlarmRecipients(func(r *AlarmRecipient) bool { return r.OrganizationID == id })
	if err != nil {
		return nil, err
	}
	for _, r := range recipients {
		if err := tx.DeleteAlarmRecipient(r.ID); err != nil {
			return nil, err
		}
	}
	prev := o.public()
	o.InvitedPartnerIDs, o.DeletedAt = nil, tx.now
	if err := tx.rec.Organizations().Put(o); err != nil {
		return nil, err
	}
	return o, tx.Audit(AuditChange{Action: "organization.delete", EntityType: "organization", EntityID: strconv.FormatInt(id, 10),
		OrganizationID: id, PartnerID: o.PartnerID, Before: prev, After: o.public()})
}

// deleteOrgDrivers deletes every driver of organization orgID, active or
// not, with its assignments; its past check-ins stay with the
// organization's other history.
func (tx *Tx) deleteOrgDrivers(orgID int64) error {
	drivers, _, err := tx.Drivers(DriverFilter{OrganizationIDs: map[int64]bool{orgID: true}}, Sort{}, Page{})
	if err != nil {
		return err
	}
	for i := range drivers {
		d := &drivers[i]
		if err := tx.rec.Drivers().Delete(d.ID); err != nil {
			return err
		}
		as, err := tx.rec.DriverAssignments().ByDriver(d.ID)
		if err != nil {
			return err
		}
		for _, a := range as {
			if err := tx.rec.DriverAssignments().Delete(a.ID); err != nil {
				return err
			}
		}
		if err := tx.Audit(AuditChange{Action: "driver.delete", EntityType: "driver", EntityID: strconv.FormatInt(d.ID, 10),
			OrganizationID: orgID, Reason: "its organization was deleted", Before: d.public()}); err != nil {
			return err
		}
	}
	return nil
}
