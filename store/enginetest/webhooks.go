package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// webhookTests are the tests of the audit log and webhook deliveries.
var webhookTests = []test{
	{"AuditAppendAndList", testAuditAppendAndList},
	{"AuditPurge", testAuditPurge},
	{"DeliveriesInsertGetPut", testDeliveriesInsertGetPut},
	{"DeliveriesPending", testDeliveriesPending},
	{"DeliveriesList", testDeliveriesList},
	{"DeliveriesPurgeFinished", testDeliveriesPurgeFinished},
}

// webhookTime is a time with microseconds, which every engine keeps.
var webhookTime = time.Date(2026, 3, 1, 12, 30, 45, 123456000, time.UTC)

// webhookFixture is what seedWebhooks inserts: a partner and three of its
// organizations.
type webhookFixture struct {
	partner         int64
	org, org2, org3 int64
}

// seedWebhooks inserts the directory records the webhook records refer
// to, a partner and three organizations, and makes the engine's partitions
// around webhookTime.
func seedWebhooks(t *testing.T, e store.Engine) webhookFixture {
	t.Helper()
	maintain(t, e, webhookTime)
	s := seeder{t, e, webhookTime}
	f := webhookFixture{partner: s.partner("P").ID}
	for _, id := range []*int64{&f.org, &f.org2, &f.org3} {
		*id = s.organization(store.Organization{Name: "O", PartnerID: f.partner, Retention: store.Retention{PurgeDays: 31}}).ID
	}
	return f
}

// JSONEqual reports whether a and b are the same JSON value (or both none).
func JSONEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(va, vb)
}

// appendAudit appends es in one transaction, setting their ids.
func appendAudit(t *testing.T, e store.Engine, es ...*store.AuditEntry) {
	t.Helper()
	write(t, e, func(t2 store.Records) error {
		for _, a := range es {
			if err := t2.AuditEntries().Append(a); err != nil {
				return err
			}
		}
		return nil
	})
}

// sameEntries compares audit entries, their before and after as JSON values
// (an engine may keep the value, not the spacing or key order).
func sameEntries(t *testing.T, got, want []store.AuditEntry) bool {
	t.Helper()
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if !JSONEqual(t, g.Before, w.Before) || !JSONEqual(t, g.After, w.After) {
			return false
		}
		g.Before, g.After, w.Before, w.After = nil, nil, nil, nil
		if !reflect.DeepEqual(g, w) {
			return false
		}
	}
	return true
}

func testAuditAppendAndList(t *testing.T, e store.Engine) {
	f := seedWebhooks(t, e)
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
	// Entries i%3 == 0 are org's with the partner and user 5, i%3 == 1
	// org2's creations, i%3 == 2 the partner's own; the entity id is i%4.
	// A list is newest first.
	filters := []struct {
		f    store.AuditFilter
		want []int
	}{
		{store.AuditFilter{}, []int{14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
		{store.AuditFilter{OrganizationID: f.org}, []int{12, 9, 6, 3, 0}},
		{store.AuditFilter{PartnerID: f.partner}, []int{14, 12, 11, 9, 8, 6, 5, 3, 2, 0}},
		{store.AuditFilter{PartnerID: f.partner, OrganizationID: f.org}, []int{12, 9, 6, 3, 0}},
		{store.AuditFilter{EntityType: "device", EntityID: "2"}, []int{14, 10, 6, 2}},
		{store.AuditFilter{Action: "device.create"}, []int{13, 10, 7, 4, 1}},
		{store.AuditFilter{UserID: 5}, []int{12, 9, 6, 3, 0}},
		{store.AuditFilter{Start: es[4].Time, End: es[9].Time}, []int{9, 8, 7, 6, 5, 4}},
		{store.AuditFilter{Start: es[4].Time.Add(time.Nanosecond), End: es[9].Time.Add(-time.Nanosecond)}, []int{8, 7, 6, 5}},
		{store.AuditFilter{Start: es[4].Time, End: time.Unix(1<<62, 0)}, []int{14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4}},
		{store.AuditFilter{OrganizationID: f.org3}, nil},
	}
	pages := []store.Page{{}, {Limit: 4}, {Limit: 4, Offset: 4}, {Offset: 3}, {Limit: 3, Offset: 30}}
	for i, c := range filters {
		want := make([]store.AuditEntry, 0, len(c.want))
		for _, j := range c.want {
			want = append(want, *es[j])
		}
		for _, p := range pages {
			wantPage := pageOf(want, p)
			var got []store.AuditEntry
			var total int
			read(t, e, func(t2 store.Records) (err error) {
				got, total, err = t2.AuditEntries().List(t.Context(), c.f, p)
				return err
			})
			if total != len(want) || !sameEntries(t, got, wantPage) {
				t.Errorf("filter %d %+v, page %+v: %d entries of %d\n%+v\nwant %d of %d\n%+v", i, c.f, p,
					len(got), total, got, len(wantPage), len(want), wantPage)
			}
		}
	}

	// List stops with its context's error.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := e.View(t.Context(), func(t2 store.Records) error {
		_, _, err := t2.AuditEntries().List(ctx, store.AuditFilter{}, store.Page{})
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("List under an ended context: %v; want context.Canceled", err)
	}
}

func testAuditPurge(t *testing.T, e store.Engine) {
	f := seedWebhooks(t, e)
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
	var want []int64 // left: 2, 5, 7, 8, 9, 10, 11
	for _, i := range []int{2, 5, 7, 8, 9, 10, 11} {
		want = append(want, es[i].ID)
	}
	total, batches := purgeAll(t, e, 2, func(r store.Records, from []byte) (int, []byte, error) {
		return r.AuditEntries().Purge(cut, from, 2)
	})
	if total != 5 || batches != 3 {
		t.Errorf("purged %d in %d batches; want 5 in 3", total, batches)
	}
	var left []int64
	read(t, e, func(t2 store.Records) error {
		got, _, err := t2.AuditEntries().List(t.Context(), store.AuditFilter{}, store.Page{})
		for i := len(got) - 1; i >= 0; i-- {
			left = append(left, got[i].ID)
		}
		return err
	})
	if !reflect.DeepEqual(left, want) {
		t.Errorf("left %v; want %v", left, want)
	}
	write(t, e, func(t2 store.Records) error {
		for _, c := range []store.Cutoffs{cut, nil} {
			n, next, err := t2.AuditEntries().Purge(c, nil, 2)
			if err != nil || n != 0 || next != nil {
				t.Errorf("purging again: %d, %x, %v; want nothing", n, next, err)
			}
		}
		return nil
	})
	// Without a limit every due entry goes in one batch: org's 9 and
	// org2's 7 and 10; the partner's own stay.
	late := store.Cutoffs{f.org: webhookTime.Add(30 * day), f.org2: webhookTime.Add(30 * day)}
	if total, batches := purgeAll(t, e, math.MaxInt, func(r store.Records, from []byte) (int, []byte, error) {
		return r.AuditEntries().Purge(late, from, 0)
	}); total != 3 || batches != 1 {
		t.Errorf("a purge without a limit deleted %d in %d batches; want 3 in one", total, batches)
	}
}

// insertDeliveries inserts ds in one transaction, setting their ids.
func insertDeliveries(t *testing.T, e store.Engine, ds ...*store.Delivery) {
	t.Helper()
	write(t, e, func(t2 store.Records) error {
		for _, d := range ds {
			if err := t2.Deliveries().Insert(d); err != nil {
				return err
			}
		}
		return nil
	})
}

// pendingDelivery is a new delivery as the store enqueues it.
func pendingDelivery(org int64, url, imei string, created time.Time) *store.Delivery {
	return &store.Delivery{OrganizationID: org, URL: url, IMEI: imei, MessageSeq: 1, WebhookID: "msg_1",
		Type: store.WebhookTypeEvent, MessageTime: created, CreatedAt: created, Status: store.DeliveryPending,
		NextAttemptAt: created, Body: []byte(`{}`)}
}

func testDeliveriesInsertGetPut(t *testing.T, e store.Engine) {
	f := seedWebhooks(t, e)
	d := &store.Delivery{OrganizationID: f.org, URL: "https://r.example.com/e", MessageSeq: 42, WebhookID: "msg_42",
		Type: store.WebhookTypeEvent, MessageType: "harshBraking", IMEI: "490154203237518",
		MessageTime: webhookTime.Add(-time.Minute), CreatedAt: webhookTime, Status: store.DeliveryPending,
		NextAttemptAt: webhookTime,
		// the body as it was rendered, key order and number text included
		Body: []byte(`{"type":"event","data":{"z":1,"a":[1.50,2]}}`)}
	insertDeliveries(t, e, d)
	if d.ID == 0 {
		t.Fatal("Insert set no id")
	}
	get := func(id int64) (*store.Delivery, error) {
		var got *store.Delivery
		err := e.View(t.Context(), func(t2 store.Records) (err error) { got, err = t2.Deliveries().Get(id); return err })
		return got, err
	}
	got, err := get(d.ID)
	if err != nil || !reflect.DeepEqual(got, d) {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, d)
	}
	if string(got.Body) != string(d.Body) {
		t.Errorf("body %s; want it byte for byte %s", got.Body, d.Body)
	}
	if _, err := get(d.ID + 100); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of no delivery: %v; want store.ErrNotFound", err)
	}

	// Attempts, then the end: every field stored, the attempt log with it.
	d.RecordAttempt(store.DeliveryAttempt{Time: webhookTime.Add(time.Second), StatusCode: 503, Error: "busy", DurationMS: 12})
	d.RecordAttempt(store.DeliveryAttempt{Time: webhookTime.Add(time.Minute), StatusCode: 200, DurationMS: 7})
	d.Status, d.FinishedAt, d.NextAttemptAt = store.DeliveryDelivered, webhookTime.Add(time.Minute), time.Time{}
	write(t, e, func(t2 store.Records) error { return t2.Deliveries().Put(d) })
	got, err = get(d.ID)
	if err != nil || !reflect.DeepEqual(got, d) {
		t.Fatalf("after Put = %+v, %v; want %+v", got, err, d)
	}

	// A redelivery: a new, higher id.
	r := &store.Delivery{OrganizationID: f.org, URL: d.URL, MessageSeq: d.MessageSeq, WebhookID: d.WebhookID, Type: d.Type,
		IMEI: d.IMEI, MessageTime: d.MessageTime, CreatedAt: webhookTime.Add(time.Hour), Status: store.DeliveryPending,
		NextAttemptAt: webhookTime.Add(time.Hour), RedeliveryOf: d.ID, Body: d.Body}
	insertDeliveries(t, e, r)
	if r.ID <= d.ID {
		t.Errorf("redelivery id %d; want above %d", r.ID, d.ID)
	}
	if got, err := get(r.ID); err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("redelivery = %+v, %v; want %+v", got, err, r)
	}

	// Put of an id not stored stores it under that id.
	lost := pendingDelivery(f.org, d.URL, d.IMEI, webhookTime)
	lost.ID = r.ID + 50
	write(t, e, func(t2 store.Records) error { return t2.Deliveries().Put(lost) })
	if got, err := get(lost.ID); err != nil || !reflect.DeepEqual(got, lost) {
		t.Errorf("put of a new id = %+v, %v; want %+v", got, err, lost)
	}
}

func testDeliveriesPending(t *testing.T, e store.Engine) {
	f := seedWebhooks(t, e)
	const dev1, dev2 = "357660101000016", "490154203237518"
	// URLs in byte order: upper case before lower, "/" before letters.
	urlA, urlB, urlC := "https://Z.example.com", "https://a.example.com/", "https://a.example.com/x"
	ds := []*store.Delivery{
		pendingDelivery(f.org, urlB, dev2, webhookTime),
		pendingDelivery(f.org, urlB, dev1, webhookTime),
		pendingDelivery(f.org2, urlA, dev1, webhookTime),
		pendingDelivery(f.org, urlA, "", webhookTime),
		pendingDelivery(f.org, urlC, dev1, webhookTime),
		pendingDelivery(f.org, urlB, dev2, webhookTime.Add(time.Second)),
		pendingDelivery(f.org, urlB, dev1, webhookTime), // finished below
	}
	ds[3].NextAttemptAt = webhookTime.Add(time.Hour)
	insertDeliveries(t, e, ds...)
	write(t, e, func(t2 store.Records) error {
		d := ds[6]
		d.Status, d.FinishedAt = store.DeliveryFailed, webhookTime
		return t2.Deliveries().Put(d)
	})
	entry := func(d *store.Delivery) store.QueueEntry {
		return store.QueueEntry{OrganizationID: d.OrganizationID, URL: d.URL, IMEI: d.IMEI, DeliveryID: d.ID,
			NextAttemptAt: d.NextAttemptAt, CreatedAt: d.CreatedAt}
	}
	entries := func(ds ...*store.Delivery) []store.QueueEntry {
		var out []store.QueueEntry
		for _, d := range ds {
			out = append(out, entry(d))
		}
		return out
	}
	if ds[0].OrganizationID > ds[2].OrganizationID {
		t.Fatal("the fixture's organizations are not in id order")
	}
	for _, c := range []struct {
		name string
		org  int64
		url  string
		want []store.QueueEntry
	}{
		{"all", 0, "", entries(ds[3], ds[1], ds[0], ds[5], ds[4], ds[2])},
		{"all, the URL ignored without an organization", 0, urlB, entries(ds[3], ds[1], ds[0], ds[5], ds[4], ds[2])},
		{"an organization's", f.org, "", entries(ds[3], ds[1], ds[0], ds[5], ds[4])},
		{"an organization's URL", f.org, urlB, entries(ds[1], ds[0], ds[5])},
		{"another organization's", f.org2, "", entries(ds[2])},
		{"none", f.org3, "", nil},
	} {
		var got []store.QueueEntry
		read(t, e, func(t2 store.Records) (err error) { got, err = t2.Deliveries().Pending(c.org, c.url); return err })
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n%+v\nwant\n%+v", c.name, got, c.want)
		}
	}
}

func testDeliveriesList(t *testing.T, e store.Engine) {
	f := seedWebhooks(t, e)
	const dev1, dev2 = "357660101000016", "490154203237518"
	urls := []string{"https://a.example.com", "https://b.example.com"}
	var ds []*store.Delivery
	for i := range 12 {
		d := pendingDelivery(f.org, urls[i%2], []string{dev1, dev2, ""}[i%3], webhookTime.Add(time.Duration(i)*time.Hour))
		d.MessageTime = webhookTime.Add(time.Duration(i) * time.Hour)
		d.Type = []string{store.WebhookTypeEvent, store.WebhookTypeGPS}[i/6]
		ds = append(ds, d)
	}
	insertDeliveries(t, e, ds...)
	insertDeliveries(t, e, pendingDelivery(f.org2, urls[0], dev1, webhookTime))
	write(t, e, func(t2 store.Records) error {
		for _, d := range ds[:4] {
			d.Status, d.FinishedAt = store.DeliveryDelivered, webhookTime
			if err := t2.Deliveries().Put(d); err != nil {
				return err
			}
		}
		return nil
	})
	// Delivery i goes to URL i%2, of device i%3 (dev1, dev2, none), an
	// event below 6 and GPS from 6 on; 0 to 3 are delivered. A list is
	// newest first.
	filters := []struct {
		f    store.DeliveryFilter
		want []int
	}{
		{store.DeliveryFilter{}, []int{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
		{store.DeliveryFilter{Status: store.DeliveryDelivered}, []int{3, 2, 1, 0}},
		{store.DeliveryFilter{Status: store.DeliveryPending, URL: urls[1]}, []int{11, 9, 7, 5}},
		{store.DeliveryFilter{IMEI: dev2}, []int{10, 7, 4, 1}},
		{store.DeliveryFilter{Type: store.WebhookTypeGPS, IMEI: dev1}, []int{9, 6}},
		{store.DeliveryFilter{Devices: map[string]time.Time{dev1: webhookTime.Add(3*time.Hour + time.Nanosecond), dev2: {}}}, []int{10, 9, 7, 6, 4, 1}},
		{store.DeliveryFilter{Devices: map[string]time.Time{"": {}}}, nil},
		{store.DeliveryFilter{Devices: map[string]time.Time{}}, nil},
		{store.DeliveryFilter{URL: "https://none.example.com"}, nil},
	}
	pages := []store.Page{{}, {Limit: 5}, {Limit: 5, Offset: 5}, {Limit: 5, Offset: 10}, {Offset: 3}, {Limit: 2, Offset: 40}}
	for i, c := range filters {
		want := make([]store.Delivery, 0, len(c.want))
		for _, j := range c.want {
			want = append(want, *ds[j])
		}
		for _, p := range pages {
			wantPage := pageOf(want, p)
			var got []store.Delivery
			var total int
			read(t, e, func(t2 store.Records) (err error) { got, total, err = t2.Deliveries().List(f.org, c.f, p); return err })
			if total != len(want) || len(got) != len(wantPage) {
				t.Errorf("filter %d, page %+v: %d of %d; want %d of %d", i, p, len(got), total, len(wantPage), len(want))
				continue
			}
			for k := range got {
				if !reflect.DeepEqual(got[k], wantPage[k]) {
					t.Errorf("filter %d, page %+v, row %d:\n%+v\nwant\n%+v", i, p, k, got[k], wantPage[k])
				}
			}
		}
	}
}

func testDeliveriesPurgeFinished(t *testing.T, e store.Engine) {
	f := seedWebhooks(t, e)
	day := 24 * time.Hour
	// Nine deliveries a day apart, alternating between org and org2, every
	// third still pending, the others finished an hour after creation;
	// and one of org3, which has no cutoff.
	var ds []*store.Delivery
	for i := range 9 {
		created := webhookTime.Add(time.Duration(i) * day)
		d := pendingDelivery([]int64{f.org, f.org2}[i%2], "https://r.example.com", "", created)
		if i%3 != 2 {
			d.Status, d.FinishedAt = []string{store.DeliveryDelivered, store.DeliveryFailed}[i%2], created.Add(time.Hour)
		}
		ds = append(ds, d)
	}
	old := pendingDelivery(f.org3, "https://r.example.com", "", webhookTime)
	old.Status, old.FinishedAt = store.DeliveryDelivered, webhookTime
	insertDeliveries(t, e, append(ds, old)...)

	// org's cutoff a nanosecond after day 6's finish, which goes with days
	// 0 and 4 (2 and 8 are pending); org2's cutoff at day 3's finish, which
	// stays, so that only day 1's goes (5 is pending).
	cut := store.Cutoffs{f.org: webhookTime.Add(6*day + time.Hour + time.Nanosecond), f.org2: webhookTime.Add(3*day + time.Hour)}
	// Left: org's 2 and 8 (pending), org2's 3 and 7 (finished at or after
	// its cutoff) and 5 (pending), and org3's.
	var want []int64
	for _, i := range []int{2, 3, 5, 7, 8} {
		want = append(want, ds[i].ID)
	}
	want = append(want, old.ID)
	total, batches := purgeAll(t, e, 3, func(r store.Records, from []byte) (int, []byte, error) {
		return r.Deliveries().PurgeFinished(cut, from, 3)
	})
	if total != 4 || batches != 2 {
		t.Errorf("purged %d in %d batches; want 4 in 2", total, batches)
	}
	var left []int64
	read(t, e, func(t2 store.Records) error {
		for _, d := range append(ds, old) {
			if _, err := t2.Deliveries().Get(d.ID); err == nil {
				left = append(left, d.ID)
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return nil
	})
	if fmt.Sprint(left) != fmt.Sprint(want) {
		t.Errorf("left %v; want %v", left, want)
	}
	// Nothing is due any more; an empty cutoff list purges nothing.
	write(t, e, func(t2 store.Records) error {
		for _, c := range []store.Cutoffs{cut, nil} {
			n, next, err := t2.Deliveries().PurgeFinished(c, nil, 3)
			if err != nil || n != 0 || next != nil {
				t.Errorf("purging again: %d, %x, %v; want nothing", n, next, err)
			}
		}
		return nil
	})
	// Without a limit every finished delivery due goes in one batch: org2's
	// 3 and 7 and org3's; the pending ones stay whatever their age.
	late := store.Cutoffs{f.org: webhookTime.Add(30 * day), f.org2: webhookTime.Add(30 * day), f.org3: webhookTime.Add(30 * day)}
	if total, batches := purgeAll(t, e, math.MaxInt, func(r store.Records, from []byte) (int, []byte, error) {
		return r.Deliveries().PurgeFinished(late, from, 0)
	}); total != 3 || batches != 1 {
		t.Errorf("a purge without a limit deleted %d in %d batches; want 3 in one", total, batches)
	}
}
