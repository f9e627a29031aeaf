package postgres

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// insertDeliveries inserts ds in one transaction, setting their ids.
func insertDeliveries(t *testing.T, e *Engine, ds ...*store.Delivery) {
	t.Helper()
	write(t, e, func(t2 *tx) error {
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

func TestDeliveriesInsertGetPut(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	d := &store.Delivery{OrganizationID: f.org, URL: "https://r.example.com/e", MessageSeq: 42, WebhookID: "msg_42",
		Type: store.WebhookTypeEvent, MessageType: "harshBraking", IMEI: "490154203237518",
		MessageTime: webhookTime.Add(-time.Minute), CreatedAt: webhookTime, Status: store.DeliveryPending,
		NextAttemptAt: webhookTime,
		// the body as it was rendered, spacing and key order included
		Body: []byte(`{"type": "event", "data": {"z": 1, "a": [1.50, 2]}}`)}
	insertDeliveries(t, e, d)
	if d.ID == 0 {
		t.Fatal("Insert set no id")
	}
	get := func(id int64) (*store.Delivery, error) {
		var got *store.Delivery
		err := e.view(t.Context(), func(t2 *tx) (err error) { got, err = t2.Deliveries().Get(id); return err })
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
	write(t, e, func(t2 *tx) error { return t2.Deliveries().Put(d) })
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
	write(t, e, func(t2 *tx) error { return t2.Deliveries().Put(lost) })
	if got, err := get(lost.ID); err != nil || !reflect.DeepEqual(got, lost) {
		t.Errorf("put of a new id = %+v, %v; want %+v", got, err, lost)
	}
}

func TestDeliveriesPending(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
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
	write(t, e, func(t2 *tx) error {
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
		read(t, e, func(t2 *tx) (err error) { got, err = t2.Deliveries().Pending(c.org, c.url); return err })
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n%+v\nwant\n%+v", c.name, got, c.want)
		}
	}
}

func TestDeliveriesList(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
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
	write(t, e, func(t2 *tx) error {
		for _, d := range ds[:4] {
			d.Status, d.FinishedAt = store.DeliveryDelivered, webhookTime
			if err := t2.Deliveries().Put(d); err != nil {
				return err
			}
		}
		return nil
	})
	filters := []store.DeliveryFilter{
		{},
		{Status: store.DeliveryDelivered},
		{Status: store.DeliveryPending, URL: urls[1]},
		{IMEI: dev2},
		{Type: store.WebhookTypeGPS, IMEI: dev1},
		{Devices: map[string]time.Time{dev1: webhookTime.Add(3*time.Hour + time.Nanosecond), dev2: {}}},
		{Devices: map[string]time.Time{"": {}}},
		{Devices: map[string]time.Time{}},
		{URL: "https://none.example.com"},
	}
	pages := []store.Page{{}, {Limit: 5}, {Limit: 5, Offset: 5}, {Limit: 5, Offset: 10}, {Offset: 3}, {Limit: 2, Offset: 40}}
	for i, filter := range filters {
		var want []store.Delivery
		for j := len(ds) - 1; j >= 0; j-- {
			if filter.Match(ds[j]) {
				want = append(want, *ds[j])
			}
		}
		for _, p := range pages {
			wantPage, wantTotal := store.Paginate(want, p)
			var got []store.Delivery
			var total int
			read(t, e, func(t2 *tx) (err error) { got, total, err = t2.Deliveries().List(f.org, filter, p); return err })
			if total != wantTotal || len(got) != len(wantPage) {
				t.Errorf("filter %d, page %+v: %d of %d; want %d of %d", i, p, len(got), total, len(wantPage), wantTotal)
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

func TestDeliveriesPurgeFinished(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
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
	var want []int64 // left
	for i, d := range ds {
		due := d.Status != store.DeliveryPending && d.FinishedAt.Before(cut[d.OrganizationID])
		if !due {
			want = append(want, ds[i].ID)
		}
	}
	want = append(want, old.ID)
	if len(want) != 10-4 {
		t.Fatalf("the fixture makes %d due; want 4", 10-len(want))
	}

	var from []byte
	total, batches := 0, 0
	for {
		var n int
		write(t, e, func(t2 *tx) (err error) { n, from, err = t2.Deliveries().PurgeFinished(cut, from, 3); return err })
		total, batches = total+n, batches+1
		if n > 3 {
			t.Fatalf("a batch of 3 deleted %d", n)
		}
		if from == nil {
			break
		}
		if batches > 10 {
			t.Fatal("the purge does not end")
		}
	}
	if total != 4 || batches != 2 {
		t.Errorf("purged %d in %d batches; want 4 in 2", total, batches)
	}
	var left []int64
	read(t, e, func(t2 *tx) error {
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
	write(t, e, func(t2 *tx) error {
		for _, c := range []store.Cutoffs{cut, nil} {
			n, next, err := t2.Deliveries().PurgeFinished(c, nil, 3)
			if err != nil || n != 0 || next != nil {
				t.Errorf("purging again: %d, %x, %v; want nothing", n, next, err)
			}
		}
		return nil
	})
}
