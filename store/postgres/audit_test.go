package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// appendAudit appends es in one transaction, setting their ids.
func appendAudit(t *testing.T, e *Engine, es ...*store.AuditEntry) {
	t.Helper()
	write(t, e, func(t2 *tx) error {
		for _, a := range es {
			if err := t2.AuditEntries().Append(a); err != nil {
				return err
			}
		}
		return nil
	})
}

// sameEntries compares audit entries, their before and after as JSON values
// (jsonb keeps the value, not the spacing or key order).
func sameEntries(t *testing.T, got, want []store.AuditEntry) bool {
	t.Helper()
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if !jsonEqual(t, g.Before, w.Before) || !jsonEqual(t, g.After, w.After) {
			return false
		}
		g.Before, g.After, w.Before, w.After = nil, nil, nil, nil
		if !reflect.DeepEqual(g, w) {
			return false
		}
	}
	return true
}

func TestAuditAppendAndList(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	var es []*store.AuditEntry
	for i := range 15 {
		a := &store.AuditEntry{Time: webhookTime.Add(time.Duration(i) * time.Minute), Action: "device.update",
			EntityType: "device", EntityID: strconv.Itoa(i % 4), Source: "api", RequestID: "req-" + strconv.Itoa(i)}
		switch i % 3 {
		case 0:
			a.OrganizationID, a.PartnerID, a.UserID, a.UserEmail = f.org, f.partner, 5, "ann@example.com"
		case 1:
			a.OrganizationID, a.Action = f.org2, "device.create"
		case 2:
			a.PartnerID, a.Reason = f.partner, "moved" // a partner's own entry
		}
		if i%2 == 0 {
			a.Before = json.RawMessage(`{"name": "Van", "tags": [1, 2]}`)
			a.After = json.RawMessage(`{"name":"Truck","tags":[1,2,3]}`)
		}
		es = append(es, a)
	}
	appendAudit(t, e, es[:10]...)
	appendAudit(t, e, es[10:]...)
	for i := 1; i < len(es); i++ {
		if es[i].ID <= es[i-1].ID {
			t.Fatalf("ids %d then %d; want them growing", es[i-1].ID, es[i].ID)
		}
	}
	filters := []store.AuditFilter{
		{},
		{OrganizationID: f.org},
		{PartnerID: f.partner},
		{PartnerID: f.partner, OrganizationID: f.org},
		{EntityType: "device", EntityID: "2"},
		{Action: "device.create"},
		{UserID: 5},
		{Start: es[4].Time, End: es[9].Time},
		{Start: es[4].Time.Add(time.Nanosecond), End: es[9].Time.Add(-time.Nanosecond)},
		{Start: es[4].Time, End: time.Unix(1<<62, 0)},
		{OrganizationID: f.org3},
	}
	pages := []store.Page{{}, {Limit: 4}, {Limit: 4, Offset: 4}, {Offset: 3}, {Limit: 3, Offset: 30}}
	for i, filter := range filters {
		var want []store.AuditEntry
		for j := len(es) - 1; j >= 0; j-- {
			if filter.Match(es[j]) {
				want = append(want, *es[j])
			}
		}
		for _, p := range pages {
			wantPage, wantTotal := store.Paginate(want, p)
			var got []store.AuditEntry
			var total int
			read(t, e, func(t2 *tx) (err error) {
				got, total, err = t2.AuditEntries().List(context.Background(), filter, p)
				return err
			})
			if total != wantTotal || !sameEntries(t, got, wantPage) {
				t.Errorf("filter %d %+v, page %+v: %d entries of %d\n%+v\nwant %d of %d\n%+v", i, filter, p,
					len(got), total, got, len(wantPage), wantTotal, wantPage)
			}
		}
	}

	// List stops with its context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := e.view(context.Background(), func(t2 *tx) error {
		_, _, err := t2.AuditEntries().List(ctx, store.AuditFilter{}, store.Page{})
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("List under an ended context: %v; want context.Canceled", err)
	}
}

func TestAuditPurge(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	day := 24 * time.Hour
	// Twelve entries a day apart, org, org2 and a partner's own in turn.
	var es []*store.AuditEntry
	for i := range 12 {
		a := &store.AuditEntry{Time: webhookTime.Add(time.Duration(i) * day), Action: "device.update",
			EntityType: "device", EntityID: "1", OrganizationID: []int64{f.org, f.org2, 0}[i%3], PartnerID: f.partner}
		es = append(es, a)
	}
	appendAudit(t, e, es...)
	// org's entries before day 7 (0, 3, 6), org2's before day 4 and a
	// nanosecond (1, 4); org3's cutoff is the latest but it has none; a
	// partner's own entries stay.
	cut := store.Cutoffs{f.org: webhookTime.Add(7 * day), f.org2: webhookTime.Add(4*day + time.Nanosecond),
		f.org3: webhookTime.Add(30 * day)}
	var want []int64
	for _, a := range es {
		if at, ok := cut[a.OrganizationID]; !ok || !a.Time.Before(at) {
			want = append(want, a.ID)
		}
	}
	if len(want) != 12-5 {
		t.Fatalf("the fixture makes %d due; want 5", 12-len(want))
	}
	var from []byte
	total, batches := 0, 0
	for {
		var n int
		write(t, e, func(t2 *tx) (err error) { n, from, err = t2.AuditEntries().Purge(cut, from, 2); return err })
		total, batches = total+n, batches+1
		if from == nil {
			break
		}
		if batches > 10 {
			t.Fatal("the purge does not end")
		}
	}
	if total != 5 || batches != 3 {
		t.Errorf("purged %d in %d batches; want 5 in 3", total, batches)
	}
	var left []int64
	read(t, e, func(t2 *tx) error {
		got, _, err := t2.AuditEntries().List(context.Background(), store.AuditFilter{}, store.Page{})
		for i := len(got) - 1; i >= 0; i-- {
			left = append(left, got[i].ID)
		}
		return err
	})
	if !reflect.DeepEqual(left, want) {
		t.Errorf("left %v; want %v", left, want)
	}
	write(t, e, func(t2 *tx) error {
		for _, c := range []store.Cutoffs{cut, nil} {
			n, next, err := t2.AuditEntries().Purge(c, nil, 2)
			if err != nil || n != 0 || next != nil {
				t.Errorf("purging again: %d, %x, %v; want nothing", n, next, err)
			}
		}
		return nil
	})
}
