package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// fixtureNames are the fixture's directory names, as the store would look
// them up: a record that is gone has the empty name.
type fixtureNames struct{ f alarmFixture }

func (n fixtureNames) DeviceName(imei string) string    { return n.f.devices[imei] }
func (n fixtureNames) OrganizationName(id int64) string { return n.f.orgs[id] }
func (n fixtureNames) PartnerName(id int64) string      { return n.f.partners[id] }

// seedAlarmList inserts 48 alarms over the fixture's devices and one that
// is gone, of every definition, open and closed, read and unread, several
// within one millisecond in the reverse of their id order; some have
// comments. It returns them in id order.
func seedAlarmList(t *testing.T, e *Engine, f alarmFixture) []store.Alarm {
	t.Helper()
	imeis := append(slices.Clone(f.imeis), "350000000000099") // a device that is gone
	org := map[string]int64{}
	ptn := map[string]int64{}
	for i, imei := range imeis {
		org[imei], ptn[imei] = f.org, f.p
		if i >= 3 {
			org[imei], ptn[imei] = f.org2, f.q
		}
	}
	ptn[f.imeis[2]] = f.q // a device of Q in P's organization
	defs := store.AlarmDefinitions()
	var all []store.Alarm
	write(t, e, func(t *tx) error {
		all = nil
		for i := range 48 {
			imei := imeis[i%len(imeis)]
			// four alarms to a millisecond, created in the reverse of their id order
			at := alarmTime.Add(time.Duration(i/4)*time.Millisecond + time.Duration(3-i%4)*time.Microsecond)
			if i%11 == 0 {
				at = at.Add(-time.Duration(i) * time.Hour)
			}
			a, err := newAlarm(t, imei, org[imei], ptn[imei], defs[i%len(defs)].ID, at)
			if err != nil {
				return err
			}
			a.Open, a.Read = i%3 != 0, i%4 == 1
			if i%5 == 0 {
				note, err := t.Alarms().NextNoteID()
				if err != nil {
					return err
				}
				a.Comments = append(a.Comments, store.AlarmComment{ID: note, AlarmID: a.ID, Details: fmt.Sprint("comment ", i),
					CreatedByAudienceName: store.AudiencePartner, CreatedByID: 2, CommentorName: "Bo", CreatedAt: at})
			}
			if err := t.Alarms().Insert(a); err != nil {
				return err
			}
			all = append(all, *a)
		}
		return nil
	})
	return all
}

// TestAlarmListAsMatchAndOrder lists the alarms through many filters, in
// every order, a page at a time, and compares each page and total with
// what AlarmFilter.Match, AlarmOrder and Paginate make of every alarm.
func TestAlarmListAsMatchAndOrder(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	fx := seedAlarms(t, e)
	inserted := seedAlarmList(t, e, fx)
	var all []store.Alarm
	read(t, e, func(r *tx) error {
		var err error
		all, _, err = r.Alarms().List(store.AlarmFilter{}, store.Sort{}, store.Page{}, nil)
		return err
	})
	if len(all) != 48 {
		t.Fatalf("listed %d alarms; want 48", len(all))
	}
	names := fixtureNames{fx}
	yes, no := true, false
	probe := all[17].CreatedAt
	filters := []store.AlarmFilter{
		{},
		{OrganizationIDs: map[int64]bool{fx.org: true}},
		{OrganizationIDs: map[int64]bool{fx.org: false, fx.org2: true}},
		{OrganizationIDs: map[int64]bool{}},
		{PartnerID: fx.q},
		{PartnerID: fx.q, OrganizationIDs: map[int64]bool{fx.org: true}},
		{IMEI: fx.imeis[1]},
		{IMEI: "350000000000099"},
		{DefinitionID: store.AlarmSDCardFailing},
		{DefinitionName: "sd CARD"},
		{DefinitionName: "nothing like it"},
		{Severity: 40},
		{Severity: 35},
		{Severity: 60, DefinitionName: "card"},
		{Open: &yes},
		{Open: &no, Read: &yes},
		{Read: &no},
		{Start: probe},
		{Start: probe.Add(time.Nanosecond)},
		{End: probe},
		{End: probe.Add(-time.Nanosecond)},
		{Start: probe.Add(-2 * time.Millisecond), End: probe.Add(2*time.Millisecond + 500*time.Nanosecond)},
		{AfterID: all[30].ID},
		{DeviceName: "ärger"},
		{DeviceName: "VAN"},
		{DeviceName: "kelvin"},
		{DeviceName: "u"},
		{DeviceName: "nowhere"},
		{DeviceName: "a", Open: &yes, OrganizationIDs: map[int64]bool{fx.org: true}},
	}
	keys := []string{"", store.AlarmByCreatedAt, store.AlarmByDeviceName, store.AlarmByIMEI, store.AlarmByOrganizationName,
		store.AlarmByPartnerName, store.AlarmBySeverity, store.AlarmByDefinitionName}
	pages := []store.Page{{}, {Limit: 5}, {Limit: 7, Offset: 3}, {Offset: 40}, {Limit: 5, Offset: 100}}
	read(t, e, func(r *tx) error {
		for _, flt := range filters {
			var kept []store.Alarm
			for _, a := range all {
				if flt.Match(&a, names) {
					kept = append(kept, a)
				}
			}
			for _, key := range keys {
				for _, desc := range []bool{false, true} {
					s := store.Sort{Key: key, Desc: desc}
					order, err := store.AlarmOrder(s, names)
					if err != nil {
						return err
					}
					sorted := slices.Clone(kept)
					slices.SortFunc(sorted, func(a, b store.Alarm) int { return order(&a, &b) })
					for _, p := range pages {
						want, wantTotal := store.Paginate(sorted, p)
						got, total, err := r.Alarms().List(flt, s, p, names)
						if err != nil {
							return fmt.Errorf("filter %+v, sort %+v, page %+v: %w", flt, s, p, err)
						}
						if total != wantTotal || !reflect.DeepEqual(alarmIDs(got), alarmIDs(want)) {
							t.Errorf("filter %+v, sort %+v, page %+v: %v of %d; want %v of %d",
								flt, s, p, alarmIDs(got), total, alarmIDs(want), wantTotal)
						}
					}
				}
			}
		}
		return nil
	})

	// Each listed alarm is whole, as inserted.
	for i := range all {
		if !reflect.DeepEqual(all[i], inserted[i]) {
			t.Errorf("listed\n %+v\nwant %+v", all[i], inserted[i])
		}
	}
	err := e.view(context.Background(), func(r *tx) error {
		_, _, err := r.Alarms().List(store.AlarmFilter{}, store.Sort{Key: "colour"}, store.Page{}, names)
		return err
	})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a list sorted by an unknown key: %v; want ErrInvalid", err)
	}
}

// TestAlarmListNamesAreCurrent renames and removes directory rows: the
// list sorts and filters by the names as they are now.
func TestAlarmListNamesAreCurrent(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	f := seedAlarms(t, e)
	seedAlarmList(t, e, f)
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `UPDATE devices SET name = 'zebra' WHERE imei = $1`, f.imeis[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `DELETE FROM devices WHERE imei = $1`, f.imeis[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE organizations SET name = 'Aardvark' WHERE id = $1`, f.org2); err != nil {
		t.Fatal(err)
	}
	read(t, e, func(r *tx) error {
		got, total, err := r.Alarms().List(store.AlarmFilter{DeviceName: "ZEB"}, store.Sort{}, store.Page{}, nil)
		if err != nil {
			return err
		}
		for _, a := range got {
			if a.IMEI != f.imeis[1] {
				t.Errorf("device name zeb kept an alarm of %s", a.IMEI)
			}
		}
		if total == 0 {
			t.Error("device name zeb kept nothing")
		}
		if got, _, err = r.Alarms().List(store.AlarmFilter{DeviceName: "ärger"}, store.Sort{}, store.Page{}, nil); err != nil || len(got) != 0 {
			t.Errorf("the name of a removed device kept %d alarms, %v", len(got), err)
		}
		got, _, err = r.Alarms().List(store.AlarmFilter{}, store.Sort{Key: store.AlarmByDeviceName}, store.Page{Limit: 1}, nil)
		if err != nil || len(got) != 1 || (got[0].IMEI != f.imeis[0] && got[0].IMEI != "350000000000099" && got[0].IMEI != f.imeis[2]) {
			t.Errorf("first by device name: %+v, %v; want an alarm of a device without a name", got, err)
		}
		got, _, err = r.Alarms().List(store.AlarmFilter{}, store.Sort{Key: store.AlarmByOrganizationName}, store.Page{Limit: 1}, nil)
		if err != nil || len(got) != 1 || got[0].OrganizationID != f.org2 {
			t.Errorf("first by organization name: %+v, %v; want an alarm of Aardvark", got, err)
		}
		return nil
	})
}

// alarmIDs are the ids of list, in its order.
func alarmIDs(list []store.Alarm) []int64 {
	ids := []int64{}
	for _, a := range list {
		ids = append(ids, a.ID)
	}
	return ids
}
