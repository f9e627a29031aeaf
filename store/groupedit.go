package store

import "strconv"

// RenameGroup gives group id a new name and audits the change.
func (tx *Tx) RenameGroup(id int64, name string) (*Group, error) {
	g, err := tx.Group(id)
	if err != nil {
		return nil, err
	}
	prev := *g
	g.Name = name
	if err := tx.rec.Groups().Put(g); err != nil {
		return nil, err
	}
	return g, tx.Audit(AuditChange{Action: "group.update", EntityType: "group", EntityID: strconv.FormatInt(id, 10),
		OrganizationID: g.OrganizationID, Before: prev, After: g})
}

// DeleteGroup deletes group id. Its devices stay in the organization, in
// no group, each change audited like any group change of a device; the
// IMEIs of the devices moved out are returned.
func (tx *Tx) DeleteGroup(id int64) ([]string, error) {
	g, err := tx.Group(id)
	if err != nil {
		return nil, err
	}
	devices, _, err := tx.Devices(DeviceFilter{OrganizationID: g.OrganizationID, GroupID: g.ID}, Page{})
	if err != nil {
		return nil, err
	}
	moved := make([]string, 0, len(devices))
	for i := range devices {
		d := &devices[i]
		d.GroupID = 0
		if err := tx.UpdateDevice(d, "device.group"); err != nil {
			return nil, err
		}
		moved = append(moved, d.IMEI)
	}
	if err := tx.rec.Groups().Delete(id); err != nil {
		return nil, err
	}
	return moved, tx.Audit(AuditChange{Action: "group.delete", EntityType: "group", EntityID: strconv.FormatInt(id, 10),
		OrganizationID: g.OrganizationID, Before: g})
}
