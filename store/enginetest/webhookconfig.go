package enginetest

import (
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// webhookConfigTests are the tests of an organization's webhook
// configuration: its settings, device subscriptions, URL states, the
// index of the types it receives, and the outbox's counters.
var webhookConfigTests = []test{
	{"WebhookSettingsWhole", testWebhookSettingsWhole},
	{"WebhookSubscriptions", testWebhookSubscriptions},
	{"WebhookEndpoints", testWebhookEndpoints},
	{"WebhookReceivers", testWebhookReceivers},
	{"WebhookOutboxCounters", testWebhookOutboxCounters},
}

// testWebhookSettingsWhole stores settings with every field set and
// settings with none, of two organizations, and replaces one whole.
func testWebhookSettingsWhole(t *testing.T, e store.Engine) {
	f := seedWebhooks(t, e)
	get := func(org int64) (*store.WebhookSettings, error) {
		t.Helper()
		var got *store.WebhookSettings
		err := e.View(t.Context(), func(r store.Records) (err error) { got, err = r.WebhookSettings().Get(org); return err })
		return got, err
	}
	_, err := get(f.org)
	wantErr(t, "settings never saved", err, store.ErrNotFound)
	full := &store.WebhookSettings{OrganizationID: f.org, GPSURLs: []string{"https://g.example.com", "https://g2.example.com"},
		EventURLs: []string{"https://e.example.com"}, AlarmURLs: []string{"https://a.example.com"},
		ActivationURLs: []string{"https://act.example.com"}, NotifyMediaAvailable: false, SubscribeForAlarmUpdates: true,
		SystemMessages: []store.SystemMessagesWebhook{{URL: "https://s.example.com",
			Config: store.SystemMessagesConfig{DeviceStatus: true, DataUsageThresholds: []float64{0.5, 0.9}, DataUsagePlan: 1.5}}},
		AllowInsecureURLs: true, UpdatedAt: webhookTime}
	empty := &store.WebhookSettings{OrganizationID: f.org2, NotifyMediaAvailable: true}
	write(t, e, func(r store.Records) error {
		if err := r.WebhookSettings().Put(full); err != nil {
			return err
		}
		return r.WebhookSettings().Put(empty)
	})
	for _, want := range []*store.WebhookSettings{full, empty} {
		got, err := get(want.OrganizationID)
		wantErr(t, "Get", err, nil)
		wantEqual(t, "settings", got, want)
	}
	// Put replaces the whole record.
	replaced := &store.WebhookSettings{OrganizationID: f.org, GPSURLs: []string{"https://x.example.com"}}
	write(t, e, func(r store.Records) error { return r.WebhookSettings().Put(replaced) })
	got, err := get(f.org)
	wantErr(t, "Get after a replace", err, nil)
	wantEqual(t, "replaced settings", got, replaced)
}

// testWebhookSubscriptions inserts subscriptions of two organizations and
// lists, gets, replaces and deletes them within their organization; an id
// stays its organization's, and ids are not reused.
func testWebhookSubscriptions(t *testing.T, e store.Engine) {
	f := seedWebhooks(t, e)
	const dev1, dev2 = "490154203237518", "357660101000016"
	subs := []*store.WebhookSubscription{
		{OrganizationID: f.org, IMEI: dev1, URL: "https://a.example.com", Type: store.WebhookTypeEvent, NotifyMediaAvailable: true},
		{OrganizationID: f.org, IMEI: dev2, URL: "https://a.example.com", Type: store.WebhookTypeGPS},
		{OrganizationID: f.org2, IMEI: dev1, URL: "https://b.example.com", Type: store.WebhookTypeAlarms, SubscribeForAlarmUpdates: true},
		{OrganizationID: f.org, IMEI: dev1, URL: "https://s.example.com", Type: store.WebhookTypeSystemMessages,
			System: store.SystemMessagesConfig{DeviceRemoved: true, PrivacyMode: true}},
	}
	write(t, e, func(r store.Records) error {
		for _, s := range subs {
			s.CreatedAt, s.UpdatedAt = webhookTime, webhookTime
			if err := r.WebhookSubscriptions().Insert(s); err != nil {
				return err
			}
		}
		return nil
	})
	if !increasing([]int64{subs[0].ID, subs[1].ID, subs[2].ID, subs[3].ID}) {
		t.Fatalf("ids %d, %d, %d, %d; want them growing", subs[0].ID, subs[1].ID, subs[2].ID, subs[3].ID)
	}
	list := func(org int64, imei string) []store.WebhookSubscription {
		t.Helper()
		var got []store.WebhookSubscription
		read(t, e, func(r store.Records) (err error) { got, err = r.WebhookSubscriptions().List(org, imei); return err })
		return got
	}
	get := func(org, id int64) (*store.WebhookSubscription, error) {
		t.Helper()
		var got *store.WebhookSubscription
		err := e.View(t.Context(), func(r store.Records) (err error) { got, err = r.WebhookSubscriptions().Get(org, id); return err })
		return got, err
	}
	wantEqual(t, "the organization's subscriptions", list(f.org, ""), []store.WebhookSubscription{*subs[0], *subs[1], *subs[3]})
	wantEqual(t, "the subscriptions of "+dev1, list(f.org, dev1), []store.WebhookSubscription{*subs[0], *subs[3]})
	wantEqual(t, "the other organization's", list(f.org2, ""), []store.WebhookSubscription{*subs[2]})
	if got := list(f.org3, ""); len(got) != 0 {
		t.Errorf("subscriptions of an organization without = %+v", got)
	}
	got, err := get(f.org2, subs[2].ID)
	wantErr(t, "Get", err, nil)
	wantEqual(t, "Get", got, subs[2])
	_, err = get(f.org, subs[2].ID)
	wantErr(t, "Get of another organization's subscription", err, store.ErrNotFound)

	// An organization subscribes a URL to one type of one device's
	// webhooks once: a second Insert, or a Put that makes one the twin of
	// another, is a conflict and stores nothing.
	twin := *subs[1]
	twin.ID = 0
	wantErr(t, "Insert of a twin", e.Update(t.Context(), func(r store.Records) error {
		return r.WebhookSubscriptions().Insert(&twin)
	}), store.ErrConflict)
	twin = *subs[0]
	twin.IMEI, twin.Type, twin.URL = subs[1].IMEI, subs[1].Type, subs[1].URL
	wantErr(t, "Put of a twin", e.Update(t.Context(), func(r store.Records) error {
		return r.WebhookSubscriptions().Put(&twin)
	}), store.ErrConflict)
	wantEqual(t, "the organization's subscriptions after the twins", list(f.org, ""), []store.WebhookSubscription{*subs[0], *subs[1], *subs[3]})

	// Put replaces; another organization's id is not found; Delete removes,
	// and deleting again is no error.
	write(t, e, func(r store.Records) error {
		s := *subs[0]
		s.URL, s.NotifyMediaAvailable, s.UpdatedAt = "https://c.example.com", false, webhookTime.Add(time.Hour)
		if err := r.WebhookSubscriptions().Put(&s); err != nil {
			return err
		}
		subs[0] = &s
		other := *subs[2]
		other.OrganizationID = f.org
		wantErr(t, "Put of another organization's id", r.WebhookSubscriptions().Put(&other), store.ErrNotFound)
		if err := r.WebhookSubscriptions().Delete(f.org, subs[1].ID); err != nil {
			return err
		}
		wantErr(t, "deleting a deleted subscription", r.WebhookSubscriptions().Delete(f.org, subs[1].ID), nil)
		return r.WebhookSubscriptions().Delete(f.org, subs[2].ID) // another organization's: stays
	})
	wantEqual(t, "after Put and Delete", list(f.org, ""), []store.WebhookSubscription{*subs[0], *subs[3]})
	got, err = get(f.org2, subs[2].ID)
	wantErr(t, "the other organization's subscription", err, nil)
	wantEqual(t, "the other organization's subscription", got, subs[2])

	// The replaced URL is the device's; the old one is free again.
	again := store.WebhookSubscription{OrganizationID: f.org, IMEI: dev1, URL: "https://a.example.com",
		Type: store.WebhookTypeEvent, CreatedAt: webhookTime, UpdatedAt: webhookTime}
	write(t, e, func(r store.Records) error { return r.WebhookSubscriptions().Insert(&again) })
	// Ids are not reused.
	if again.ID <= subs[3].ID {
		t.Errorf("new id %d; want above %d", again.ID, subs[3].ID)
	}
	wantEqual(t, "after a new insert", list(f.org, dev1), []store.WebhookSubscription{*subs[0], *subs[3], again})
}

// testWebhookEndpoints stores URL states of two organizations, lists an
// organization's in URL (byte) order and replaces one whole.
func testWebhookEndpoints(t *testing.T, e store.Engine) {
	f := seedWebhooks(t, e)
	// URLs in byte order: "Z" before "a", "/" before "x".
	eps := []*store.WebhookEndpoint{
		{OrganizationID: f.org, URL: "https://a.example.com/x", Failures: 3, BlockedUntil: webhookTime,
			LastFailureAt: webhookTime, LastError: "503"},
		{OrganizationID: f.org, URL: "https://Z.example.com", LastSuccessAt: webhookTime},
		{OrganizationID: f.org, URL: "https://a.example.com/", Disabled: true, DisabledReason: "410 Gone", DisabledAt: webhookTime},
		{OrganizationID: f.org2, URL: "https://a.example.com/x"},
	}
	get := func(org int64, url string) (*store.WebhookEndpoint, error) {
		t.Helper()
		var got *store.WebhookEndpoint
		err := e.View(t.Context(), func(r store.Records) (err error) { got, err = r.WebhookEndpoints().Get(org, url); return err })
		return got, err
	}
	list := func(org int64) []store.WebhookEndpoint {
		t.Helper()
		var got []store.WebhookEndpoint
		read(t, e, func(r store.Records) (err error) { got, err = r.WebhookEndpoints().List(org); return err })
		return got
	}
	_, err := get(f.org, eps[0].URL)
	wantErr(t, "endpoint never stored", err, store.ErrNotFound)
	write(t, e, func(r store.Records) error {
		for _, ep := range eps {
			if err := r.WebhookEndpoints().Put(ep); err != nil {
				return err
			}
		}
		return nil
	})
	for _, want := range eps {
		got, err := get(want.OrganizationID, want.URL)
		wantErr(t, "Get "+want.URL, err, nil)
		wantEqual(t, "Get "+want.URL, got, want)
	}
	wantEqual(t, "List", list(f.org), []store.WebhookEndpoint{*eps[1], *eps[2], *eps[0]})
	wantEqual(t, "List of the other organization", list(f.org2), []store.WebhookEndpoint{*eps[3]})
	if got := list(f.org3); len(got) != 0 {
		t.Errorf("endpoints of an organization without = %+v", got)
	}
	_, err = get(f.org3, eps[0].URL)
	wantErr(t, "another organization's URL", err, store.ErrNotFound)
	// Put replaces the state.
	cleared := &store.WebhookEndpoint{OrganizationID: f.org, URL: eps[2].URL}
	write(t, e, func(r store.Records) error { return r.WebhookEndpoints().Put(cleared) })
	got, err := get(f.org, eps[2].URL)
	wantErr(t, "Get after a replace", err, nil)
	wantEqual(t, "enabled again", got, cleared)
	wantEqual(t, "List after a replace", list(f.org), []store.WebhookEndpoint{*eps[1], *cleared, *eps[0]})
}

// testWebhookReceivers stores and replaces the types organizations
// receive, and lists the organizations with settings, subscriptions or
// types.
func testWebhookReceivers(t *testing.T, e store.Engine) {
	f := seedWebhooks(t, e)
	write(t, e, func(r store.Records) error {
		if err := r.WebhookReceivers().Put(f.org, []string{store.WebhookTypeEvent, store.WebhookTypeGPS}); err != nil {
			return err
		}
		return r.WebhookReceivers().Put(f.org2, []string{store.WebhookTypeAlarms})
	})
	has := func(org int64, typ string) bool {
		t.Helper()
		var ok bool
		read(t, e, func(r store.Records) (err error) { ok, err = r.WebhookReceivers().Has(org, typ); return err })
		return ok
	}
	organizations := func() []int64 {
		t.Helper()
		var orgs []int64
		read(t, e, func(r store.Records) (err error) { orgs, err = r.WebhookReceivers().Organizations(); return err })
		return orgs
	}
	for _, c := range []struct {
		org  int64
		typ  string
		want bool
	}{
		{f.org, store.WebhookTypeGPS, true}, {f.org, store.WebhookTypeEvent, true}, {f.org, store.WebhookTypeAlarms, false},
		{f.org2, store.WebhookTypeAlarms, true}, {f.org2, store.WebhookTypeGPS, false}, {f.org3, store.WebhookTypeGPS, false},
	} {
		if got := has(c.org, c.typ); got != c.want {
			t.Errorf("Has(%d, %s) = %v; want %v", c.org, c.typ, got, c.want)
		}
	}
	wantEqual(t, "Organizations", organizations(), []int64{f.org, f.org2})
	// Put replaces the types; none removes the entry.
	write(t, e, func(r store.Records) error {
		if err := r.WebhookReceivers().Put(f.org, []string{store.WebhookTypeGPS, store.WebhookTypeSystemMessages}); err != nil {
			return err
		}
		return r.WebhookReceivers().Put(f.org2, nil)
	})
	for _, c := range []struct {
		org  int64
		typ  string
		want bool
	}{
		{f.org, store.WebhookTypeEvent, false}, {f.org, store.WebhookTypeGPS, true}, {f.org, store.WebhookTypeSystemMessages, true},
		{f.org2, store.WebhookTypeAlarms, false},
	} {
		if got := has(c.org, c.typ); got != c.want {
			t.Errorf("after Put: Has(%d, %s) = %v; want %v", c.org, c.typ, got, c.want)
		}
	}
	wantEqual(t, "Organizations after org2's entry went", organizations(), []int64{f.org})

	// Organizations: those with settings, a subscription or an entry.
	write(t, e, func(r store.Records) error {
		if err := r.WebhookSettings().Put(&store.WebhookSettings{OrganizationID: f.org3}); err != nil {
			return err
		}
		return r.WebhookSubscriptions().Insert(&store.WebhookSubscription{OrganizationID: f.org3, IMEI: "490154203237518",
			URL: "https://a.example.com", Type: store.WebhookTypeGPS, CreatedAt: webhookTime, UpdatedAt: webhookTime})
	})
	wantEqual(t, "Organizations with org3's settings", organizations(), []int64{f.org, f.org3})
	write(t, e, func(r store.Records) error {
		return r.WebhookSubscriptions().Insert(&store.WebhookSubscription{OrganizationID: f.org2, IMEI: "490154203237518",
			URL: "https://a.example.com", Type: store.WebhookTypeGPS, CreatedAt: webhookTime, UpdatedAt: webhookTime})
	})
	wantEqual(t, "Organizations with org2's subscription", organizations(), []int64{f.org, f.org2, f.org3})
}

// testWebhookOutboxCounters reads the outbox's cursor and generation, 0
// until set, then set and incremented.
func testWebhookOutboxCounters(t *testing.T, e store.Engine) {
	counters := func() (int64, int64) {
		t.Helper()
		var c, g int64
		read(t, e, func(r store.Records) error {
			var err error
			if c, err = r.WebhookOutbox().Cursor(); err != nil {
				return err
			}
			g, err = r.WebhookOutbox().Generation()
			return err
		})
		return c, g
	}
	if c, g := counters(); c != 0 || g != 0 {
		t.Errorf("new outbox: cursor %d, generation %d; want 0 and 0", c, g)
	}
	write(t, e, func(r store.Records) error {
		if err := r.WebhookOutbox().SetCursor(41); err != nil {
			return err
		}
		if err := r.WebhookOutbox().IncrementGeneration(); err != nil {
			return err
		}
		return r.WebhookOutbox().IncrementGeneration()
	})
	if c, g := counters(); c != 41 || g != 2 {
		t.Errorf("cursor %d, generation %d; want 41 and 2", c, g)
	}
	write(t, e, func(r store.Records) error {
		if err := r.WebhookOutbox().SetCursor(7); err != nil {
			return err
		}
		return r.WebhookOutbox().IncrementGeneration()
	})
	if c, g := counters(); c != 7 || g != 3 {
		t.Errorf("cursor %d, generation %d; want 7 and 3", c, g)
	}
}
