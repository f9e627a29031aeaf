package store

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The alarm report: alarms filtered, sorted by a named key and paged.

// AlarmFilter selects alarms; zero fields do not filter.
type AlarmFilter struct {
	// OrganizationIDs admits alarms of these organizations (nil: any).
	OrganizationIDs map[int64]bool
	// PartnerID keeps alarms of this partner's devices.
	PartnerID    int64
	IMEI         string
	DefinitionID int64
	// DefinitionName keeps definitions whose name contains it, ignoring
	// case (ContainsFold).
	DefinitionName string
	// DeviceName keeps alarms of devices whose current name contains it,
	// ignoring case (ContainsFold); an alarm of a removed device has no
	// name.
	DeviceName string
	Severity   int
	Open       *bool
	Read       *bool
	// Start and End bound createdAt, inclusive.
	Start, End time.Time
	// AfterID keeps alarms with a larger id (the e-mail cursor).
	AfterID int64
}

// Match reports whether f keeps alarm a; names gives the device name f's
// DeviceName looks for, asked only when the rest of f keeps a.
func (f AlarmFilter) Match(a *Alarm, names AlarmNames) bool {
	def, _ := AlarmDefinitionByID(a.AlarmDefinitionID)
	return (f.OrganizationIDs == nil || f.OrganizationIDs[a.OrganizationID]) &&
		(f.PartnerID == 0 || a.PartnerID == f.PartnerID) &&
		(f.IMEI == "" || a.IMEI == f.IMEI) &&
		(f.DefinitionID == 0 || a.AlarmDefinitionID == f.DefinitionID) &&
		(f.DefinitionName == "" || ContainsFold(def.Name, f.DefinitionName)) &&
		(f.Severity == 0 || def.Severity == f.Severity) &&
		(f.Open == nil || a.Open == *f.Open) &&
		(f.Read == nil || a.Read == *f.Read) &&
		(f.Start.IsZero() || !a.CreatedAt.Before(f.Start)) &&
		(f.End.IsZero() || !a.CreatedAt.After(f.End)) &&
		a.ID > f.AfterID &&
		(f.DeviceName == "" || ContainsFold(names.DeviceName(a), f.DeviceName))
}

// Alarm sort keys. Names are those of the alarm's device, organization and
// partner now; createdAt compares to the millisecond, as the API shows it.
const (
	AlarmByCreatedAt        = "createdAt"
	AlarmByDeviceName       = "deviceName"
	AlarmByIMEI             = "imei"
	AlarmByOrganizationName = "organizationName"
	AlarmByPartnerName      = "partnerName"
	AlarmBySeverity         = "severity"
	AlarmByDefinitionName   = "definitionName"
)

// Alarms returns the page p of the alarms matching f in the order s (by
// default by id) and their total count.
func (tx *Tx) Alarms(f AlarmFilter, s Sort, p Page) ([]Alarm, int, error) {
	names := alarmNames{tx: tx, devices: map[string]string{}, orgs: map[int64]string{}, partners: map[int64]string{}}
	if _, err := AlarmOrder(s, names); err != nil {
		return nil, 0, err
	}
	return tx.rec.Alarms().List(f, s, p, names)
}

// AlarmOrder returns the order s names: by its key, alarms equal under it
// by id, all reversed when s.Desc. names gives the names the name keys
// compare. A key that is not one of the AlarmBy keys is ErrInvalid. It is
// the order of the alarm list, for an engine that sorts the alarms itself.
func AlarmOrder(s Sort, names AlarmNames) (func(a, b *Alarm) int, error) {
	def := func(a *Alarm) AlarmDefinition { d, _ := AlarmDefinitionByID(a.AlarmDefinitionID); return d }
	keys := map[string]func(a, b *Alarm) int{
		AlarmByCreatedAt: func(a, b *Alarm) int {
			return a.CreatedAt.Truncate(time.Millisecond).Compare(b.CreatedAt.Truncate(time.Millisecond))
		},
		AlarmByDeviceName: func(a, b *Alarm) int { return strings.Compare(names.DeviceName(a), names.DeviceName(b)) },
		AlarmByIMEI:       func(a, b *Alarm) int { return strings.Compare(a.IMEI, b.IMEI) },
		AlarmByOrganizationName: func(a, b *Alarm) int {
			return strings.Compare(names.OrganizationName(a.OrganizationID), names.OrganizationName(b.OrganizationID))
		},
		AlarmByPartnerName: func(a, b *Alarm) int {
			return strings.Compare(names.PartnerName(a.PartnerID), names.PartnerName(b.PartnerID))
		},
		AlarmBySeverity:       func(a, b *Alarm) int { return cmp.Compare(def(a).Severity, def(b).Severity) },
		AlarmByDefinitionName: func(a, b *Alarm) int { return strings.Compare(def(a).Name, def(b).Name) },
	}
	var by func(a, b *Alarm) int
	if s.Key != "" {
		var found bool
		if by, found = keys[s.Key]; !found {
			return nil, fmt.Errorf("sort key %q is not one of %s: %w", s.Key,
				strings.Join(slices.Sorted(maps.Keys(keys)), ", "), ErrInvalid)
		}
	}
	return func(a, b *Alarm) int {
		r := cmp.Compare(a.ID, b.ID)
		if by != nil {
			r = cmp.Or(by(a, b), r)
		}
		if s.Desc {
			return -r
		}
		return r
	}, nil
}

// alarmNames looks up, once each, the names an alarm list sorts and
// filters by; a record that is gone has no name.
type alarmNames struct {
	tx       *Tx
	devices  map[string]string
	orgs     map[int64]string
	partners map[int64]string
}

// DeviceName implements AlarmNames.
func (n alarmNames) DeviceName(a *Alarm) string {
	key := a.IMEI + "/" + strconv.FormatInt(a.OrganizationID, 10) + "/" + strconv.FormatInt(a.PartnerID, 10)
	name, found := n.devices[key]
	if !found {
		name = n.tx.AlarmDeviceName(a)
		n.devices[key] = name
	}
	return name
}

// AlarmDeviceName is the name of a's device while the device is with a's
// organization and partner; empty once it is gone or has moved on, when
// its name is its new owner's.
func (tx *Tx) AlarmDeviceName(a *Alarm) string {
	d, err := tx.Device(a.IMEI)
	if err != nil || !a.HeldBy(d) {
		return ""
	}
	return d.Name
}

// HeldBy reports whether d, the device of a's IMEI, is with a's
// organization and partner.
func (a *Alarm) HeldBy(d *Device) bool {
	return d.OrganizationID == a.OrganizationID && d.PartnerID == a.PartnerID
}

// OrganizationName implements AlarmNames.
func (n alarmNames) OrganizationName(id int64) string {
	name, found := n.orgs[id]
	if !found {
		if o, err := n.tx.Organization(id); err == nil {
			name = o.Name
		}
		n.orgs[id] = name
	}
	return name
}

// PartnerName implements AlarmNames.
func (n alarmNames) PartnerName(id int64) string {
	name, found := n.partners[id]
	if !found {
		if p, err := n.tx.Partner(id); err == nil {
			name = p.Name
		}
		n.partners[id] = name
	}
	return name
}
