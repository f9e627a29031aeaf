package postgres

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetcam/fleetcam/store"
)

// The alarm list: store.AlarmFilter as a WHERE clause, store.AlarmOrder as
// an ORDER BY, the page as LIMIT and OFFSET with the count beside it.
//
// The names the list sorts by are JOINed from the directory tables (the
// device's, organization's and partner's rows as they are now; a row that
// is gone is the empty name), compared byte by byte (COLLATE "C") as Go's
// strings.Compare does, so the AlarmNames the store passes are not needed.
// A device name filter matches the devices' name_folded keys
// (store.FoldCase), as AlarmFilter.Match compares names ignoring case. The
// alarm definitions are the code's catalogue: their names and severities
// become lists of definition ids.

// List implements store.AlarmSet.
func (s alarms) List(f store.AlarmFilter, o store.Sort, p store.Page, names store.AlarmNames) ([]store.Alarm, int, error) {
	if _, err := store.AlarmOrder(o, names); err != nil {
		return nil, 0, err
	}
	w := &where{}
	alarmConditions(w, f)
	if f.DeviceName != "" {
		// A removed device has no name, which contains no text, nor has
		// one that moved on from the alarm's organization and partner
		// (store.Alarm.HeldBy).
		w.and("EXISTS (SELECT FROM devices d WHERE d.imei = a.imei AND " + alarmHolder + " AND strpos(d.name_folded, " +
			w.arg(store.FoldCase(f.DeviceName)) + ") > 0)")
	}
	from, key := alarmOrderBy(o.Key)
	dir := ""
	if o.Desc {
		dir = " DESC"
	}
	order := "a.id" + dir
	if key != "" {
		order = key + dir + ", " + order
	}
	page, total, err := listPage(s.t, alarmColumns, from, w, order, p, alarmFields)
	if err != nil {
		return nil, 0, err
	}
	return page, total, loadAlarmNotes(s.t, page)
}

// alarmConditions adds to w the conditions of f on the alarm a, all but
// the device name.
func alarmConditions(w *where, f store.AlarmFilter) {
	if f.OrganizationIDs != nil {
		// One organization as =, which the planner can walk the
		// (organization, createdAt) index for.
		if orgs := trueKeys(f.OrganizationIDs); len(orgs) == 1 {
			w.and("a.organization_id = " + w.arg(orgs[0]))
		} else {
			w.and("a.organization_id = ANY (" + w.arg(orgs) + ")")
		}
	}
	if f.PartnerID != 0 {
		w.and("a.partner_id = " + w.arg(f.PartnerID))
	}
	if f.IMEI != "" {
		w.and("a.imei = " + w.arg(f.IMEI))
	}
	if f.DefinitionID != 0 {
		w.and("a.definition_id = " + w.arg(f.DefinitionID))
	}
	if f.DefinitionName != "" || f.Severity != 0 {
		// Definitions outside the catalogue have no name and severity 0,
		// which these conditions never keep.
		defs := []int64{}
		for _, d := range store.AlarmDefinitions() {
			if store.ContainsFold(d.Name, f.DefinitionName) && (f.Severity == 0 || d.Severity == f.Severity) {
				defs = append(defs, d.ID)
			}
		}
		w.and("a.definition_id = ANY (" + w.arg(defs) + ")")
	}
	if f.Open != nil {
		w.and("a.is_open = " + w.arg(*f.Open))
	}
	if f.Read != nil {
		w.and("a.is_read = " + w.arg(*f.Read))
	}
	if !f.Start.IsZero() {
		w.and("a.created_at >= " + w.arg(ceilMicro(f.Start)))
	}
	if !f.End.IsZero() {
		w.and("a.created_at <= " + w.arg(floorMicro(f.End)))
	}
	w.and("a.id > " + w.arg(f.AfterID))
}

// alarmHolder holds where device d is with the organization and partner
// of alarm a (store.Alarm.HeldBy): only then is its name the alarm's.
const alarmHolder = "d.organization_id = a.organization_id AND d.partner_id = a.partner_id"

// alarmOrderBy returns the FROM of the alarm list sorted by key (alarms a
// and the directory rows the key needs) and the key's ORDER BY expression
// (empty for the id order). The key is one AlarmOrder accepts.
func alarmOrderBy(key string) (from, expr string) {
	from = "alarms a"
	switch key {
	case store.AlarmByCreatedAt:
		// the expression of the index alarms_organization_created
		return from, "date_trunc('milliseconds', a.created_at AT TIME ZONE 'UTC')"
	case store.AlarmByDeviceName:
		return from + " LEFT JOIN devices d ON d.imei = a.imei AND " + alarmHolder, `COALESCE(d.name, '') COLLATE "C"`
	case store.AlarmByIMEI:
		return from, `a.imei COLLATE "C"`
	case store.AlarmByOrganizationName:
		return from + " LEFT JOIN organizations o ON o.id = a.organization_id", `COALESCE(o.name, '') COLLATE "C"`
	case store.AlarmByPartnerName:
		return from + " LEFT JOIN partners p ON p.id = a.partner_id", `COALESCE(p.name, '') COLLATE "C"`
	case store.AlarmBySeverity:
		return from, definitionCase(func(d store.AlarmDefinition) int { return d.Severity })
	case store.AlarmByDefinitionName:
		return from, definitionCase(definitionNameRanks())
	}
	return from, ""
}

// definitionCase is a CASE of a.definition_id giving each definition of the
// catalogue the value of, and any other definition the value of the zero
// definition (no name, severity 0).
func definitionCase(value func(store.AlarmDefinition) int) string {
	var b strings.Builder
	b.WriteString("CASE a.definition_id")
	for _, d := range store.AlarmDefinitions() {
		b.WriteString(" WHEN " + strconv.FormatInt(d.ID, 10) + " THEN " + strconv.Itoa(value(d)))
	}
	b.WriteString(" ELSE " + strconv.Itoa(value(store.AlarmDefinition{})) + " END")
	return b.String()
}

// definitionNameRanks ranks the definitions by name, as strings.Compare
// orders them: equal names share a rank, and the empty name of a
// definition outside the catalogue ranks first.
func definitionNameRanks() func(store.AlarmDefinition) int {
	names := []string{""}
	for _, d := range store.AlarmDefinitions() {
		names = append(names, d.Name)
	}
	slices.SortFunc(names, cmp.Compare[string])
	names = slices.Compact(names)
	return func(d store.AlarmDefinition) int {
		i, _ := slices.BinarySearch(names, d.Name)
		return i
	}
}
