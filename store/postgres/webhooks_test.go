package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// webhookTime is a time with microseconds, which timestamptz keeps.
var webhookTime = time.Date(2026, 3, 1, 12, 30, 45, 123456000, time.UTC)

// webhookFixture is what seedWebhooks inserts: a partner and three of its
// organizations.
type webhookFixture struct {
	partner         int64
	org, org2, org3 int64
}

// webhookEngine returns an engine on a new database with the schema
// applied, the partitions of the months around webhookTime, and the
// directory rows of seedWebhooks.
func webhookEngine(t *testing.T) (*Engine, webhookFixture) {
	t.Helper()
	e := openPrepared(t)
	ensureAround(t, e, webhookTime, "audit_log", "messages", "webhook_deliveries")
	return e, seedWebhooks(t, e)
}

// seedWebhooks inserts the directory rows the webhook records refer to: a
// partner and three organizations.
func seedWebhooks(t *testing.T, e *Engine) webhookFixture {
	t.Helper()
	s := seeder{t, e, webhookTime}
	f := webhookFixture{partner: s.partner("P").ID}
	for _, id := range []*int64{&f.org, &f.org2, &f.org3} {
		*id = s.organization(store.Organization{Name: "O", PartnerID: f.partner, Retention: store.Retention{PurgeDays: 31}}).ID
	}
	return f
}

// pendingDelivery is a new delivery as the store enqueues it.
func pendingDelivery(org int64, url, imei string, created time.Time) *store.Delivery {
	return &store.Delivery{OrganizationID: org, URL: url, IMEI: imei, MessageSeq: 1, WebhookID: "msg_1",
		Type: store.WebhookTypeEvent, MessageTime: created, CreatedAt: created, Status: store.DeliveryPending,
		NextAttemptAt: created, Body: []byte(`{}`)}
}

// TestDeliveryBodyByteForByte: a delivery's body is kept as it was
// rendered, its spacing too (json, not jsonb).
func TestDeliveryBodyByteForByte(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	body := `{"type": "event", "data": {"z": 1, "a": [1.50, 2]}}`
	d := pendingDelivery(f.org, "https://r.example.com/e", "", webhookTime)
	d.Body = []byte(body)
	write(t, e, func(t *tx) error { return t.Deliveries().Insert(d) })
	read(t, e, func(t *tx) error {
		got, err := t.Deliveries().Get(d.ID)
		if err == nil && string(got.Body) != body {
			return fmt.Errorf("body %s; want it byte for byte %s", got.Body, body)
		}
		return err
	})
}

func TestWebhookSettings(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	read(t, e, func(t2 *tx) error {
		if _, err := t2.WebhookSettings().Get(f.org); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("settings never saved: %v; want store.ErrNotFound", err)
		}
		return nil
	})
	full := &store.WebhookSettings{OrganizationID: f.org, GPSURLs: []string{"https://g.example.com", "https://g2.example.com"},
		EventURLs: []string{"https://e.example.com"}, AlarmURLs: []string{"https://a.example.com"},
		ActivationURLs: []string{"https://act.example.com"}, NotifyMediaAvailable: false, SubscribeForAlarmUpdates: true,
		SystemMessages: []store.SystemMessagesWebhook{{URL: "https://s.example.com",
			Config: store.SystemMessagesConfig{DeviceStatus: true, DataUsageThresholds: []float64{0.5, 0.9}, DataUsagePlan: 1.5}}},
		AllowInsecureURLs: true, UpdatedAt: webhookTime}
	empty := &store.WebhookSettings{OrganizationID: f.org2, NotifyMediaAvailable: true}
	write(t, e, func(t2 *tx) error {
		if err := t2.WebhookSettings().Put(full); err != nil {
			return err
		}
		return t2.WebhookSettings().Put(empty)
	})
	read(t, e, func(t2 *tx) error {
		for _, want := range []*store.WebhookSettings{full, empty} {
			got, err := t2.WebhookSettings().Get(want.OrganizationID)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("settings of %d = %+v, %v; want %+v", want.OrganizationID, got, err, want)
			}
		}
		return nil
	})
	// Put replaces the whole record.
	write(t, e, func(t2 *tx) error {
		return t2.WebhookSettings().Put(&store.WebhookSettings{OrganizationID: f.org, GPSURLs: []string{"https://x.example.com"}})
	})
	read(t, e, func(t2 *tx) error {
		got, err := t2.WebhookSettings().Get(f.org)
		want := &store.WebhookSettings{OrganizationID: f.org, GPSURLs: []string{"https://x.example.com"}}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("replaced settings = %+v, %v; want %+v", got, err, want)
		}
		return nil
	})
	// A row that leaves columns to their defaults reads as the defaults.
	if _, err := e.pool.Exec(context.Background(), `INSERT INTO webhook_settings (organization_id) VALUES ($1)`, f.org3); err != nil {
		t.Fatal(err)
	}
	read(t, e, func(t2 *tx) error {
		got, err := t2.WebhookSettings().Get(f.org3)
		if err != nil || !reflect.DeepEqual(got, store.DefaultWebhookSettings(f.org3)) {
			t.Errorf("settings of defaults = %+v, %v; want %+v", got, err, store.DefaultWebhookSettings(f.org3))
		}
		return nil
	})
}

func TestWebhookSubscriptions(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	const dev1, dev2 = "490154203237518", "357660101000016"
	subs := []*store.WebhookSubscription{
		{OrganizationID: f.org, IMEI: dev1, URL: "https://a.example.com", Type: store.WebhookTypeEvent, NotifyMediaAvailable: true},
		{OrganizationID: f.org, IMEI: dev2, URL: "https://a.example.com", Type: store.WebhookTypeGPS},
		{OrganizationID: f.org2, IMEI: dev1, URL: "https://b.example.com", Type: store.WebhookTypeAlarms, SubscribeForAlarmUpdates: true},
		{OrganizationID: f.org, IMEI: dev1, URL: "https://s.example.com", Type: store.WebhookTypeSystemMessages,
			System: store.SystemMessagesConfig{DeviceRemoved: true, PrivacyMode: true}},
	}
	write(t, e, func(t2 *tx) error {
		for _, s := range subs {
			s.CreatedAt, s.UpdatedAt = webhookTime, webhookTime
			if err := t2.WebhookSubscriptions().Insert(s); err != nil {
				return err
			}
		}
		return nil
	})
	for i := 1; i < len(subs); i++ {
		if subs[i].ID <= subs[i-1].ID {
			t.Fatalf("ids %d then %d; want them growing", subs[i-1].ID, subs[i].ID)
		}
	}
	read(t, e, func(t2 *tx) error {
		all, err := t2.WebhookSubscriptions().List(f.org, "")
		if want := []store.WebhookSubscription{*subs[0], *subs[1], *subs[3]}; err != nil || !reflect.DeepEqual(all, want) {
			t.Errorf("subscriptions of the organization = %+v, %v; want %+v", all, err, want)
		}
		one, err := t2.WebhookSubscriptions().List(f.org, dev1)
		if want := []store.WebhookSubscription{*subs[0], *subs[3]}; err != nil || !reflect.DeepEqual(one, want) {
			t.Errorf("subscriptions of %s = %+v, %v; want %+v", dev1, one, err, want)
		}
		got, err := t2.WebhookSubscriptions().Get(f.org2, subs[2].ID)
		if err != nil || !reflect.DeepEqual(got, subs[2]) {
			t.Errorf("Get = %+v, %v; want %+v", got, err, subs[2])
		}
		if _, err := t2.WebhookSubscriptions().Get(f.org, subs[2].ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("another organization's subscription: %v; want store.ErrNotFound", err)
		}
		return nil
	})
	// A second subscription of the same device, type and URL conflicts.
	err := e.update(context.Background(), func(t2 *tx) error {
		dup := *subs[0]
		return t2.WebhookSubscriptions().Insert(&dup)
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("a duplicate subscription: %v; want store.ErrConflict", err)
	}
	// Put replaces; another organization's id is not found; Delete removes,
	// and deleting again is no error.
	write(t, e, func(t2 *tx) error {
		s := *subs[0]
		s.URL, s.NotifyMediaAvailable, s.UpdatedAt = "https://c.example.com", false, webhookTime.Add(time.Hour)
		if err := t2.WebhookSubscriptions().Put(&s); err != nil {
			return err
		}
		subs[0] = &s
		other := *subs[2]
		other.OrganizationID = f.org
		if err := t2.WebhookSubscriptions().Put(&other); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Put of another organization's id: %v; want store.ErrNotFound", err)
		}
		if err := t2.WebhookSubscriptions().Delete(f.org, subs[1].ID); err != nil {
			return err
		}
		if err := t2.WebhookSubscriptions().Delete(f.org, subs[1].ID); err != nil {
			t.Errorf("deleting a deleted subscription: %v", err)
		}
		return t2.WebhookSubscriptions().Delete(f.org, subs[2].ID) // another organization's: stays
	})
	read(t, e, func(t2 *tx) error {
		all, err := t2.WebhookSubscriptions().List(f.org, "")
		if want := []store.WebhookSubscription{*subs[0], *subs[3]}; err != nil || !reflect.DeepEqual(all, want) {
			t.Errorf("after Put and Delete = %+v, %v; want %+v", all, err, want)
		}
		if _, err := t2.WebhookSubscriptions().Get(f.org2, subs[2].ID); err != nil {
			t.Errorf("the other organization's subscription: %v", err)
		}
		return nil
	})
	// Ids are not reused.
	write(t, e, func(t2 *tx) error {
		s := store.WebhookSubscription{OrganizationID: f.org, IMEI: dev2, URL: "https://a.example.com",
			Type: store.WebhookTypeGPS, CreatedAt: webhookTime, UpdatedAt: webhookTime}
		if err := t2.WebhookSubscriptions().Insert(&s); err != nil {
			return err
		}
		if s.ID <= subs[3].ID {
			t.Errorf("new id %d; want above %d", s.ID, subs[3].ID)
		}
		return nil
	})
}

func TestWebhookSecrets(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	created := &store.WebhookSecret{OrganizationID: f.org, Salt: []byte{1, 2, 3}, CreatedAt: webhookTime}
	write(t, e, func(t2 *tx) error {
		if _, err := t2.WebhookSecrets().Get(f.org); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("secret never created: %v; want store.ErrNotFound", err)
		}
		return t2.WebhookSecrets().Put(created)
	})
	read(t, e, func(t2 *tx) error {
		got, err := t2.WebhookSecrets().Get(f.org)
		if err != nil || !reflect.DeepEqual(got, created) {
			t.Errorf("secret = %+v, %v; want %+v", got, err, created)
		}
		return nil
	})
	rotated := &store.WebhookSecret{OrganizationID: f.org, Salt: []byte{4, 5}, PreviousSalt: []byte{1, 2, 3},
		PreviousUntil: webhookTime.Add(24 * time.Hour), CreatedAt: webhookTime, RotatedAt: webhookTime.Add(time.Hour)}
	write(t, e, func(t2 *tx) error { return t2.WebhookSecrets().Put(rotated) })
	read(t, e, func(t2 *tx) error {
		got, err := t2.WebhookSecrets().Get(f.org)
		if err != nil || !reflect.DeepEqual(got, rotated) {
			t.Errorf("rotated secret = %+v, %v; want %+v", got, err, rotated)
		}
		if _, err := t2.WebhookSecrets().Get(f.org2); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("another organization's secret: %v; want store.ErrNotFound", err)
		}
		return nil
	})
}

func TestWebhookEndpoints(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	// URLs in byte order: "Z" before "a", "/" before "0".
	eps := []*store.WebhookEndpoint{
		{OrganizationID: f.org, URL: "https://a.example.com/x", Failures: 3, BlockedUntil: webhookTime,
			LastFailureAt: webhookTime, LastError: "503"},
		{OrganizationID: f.org, URL: "https://Z.example.com", LastSuccessAt: webhookTime},
		{OrganizationID: f.org, URL: "https://a.example.com/", Disabled: true, DisabledReason: "410 Gone", DisabledAt: webhookTime},
		{OrganizationID: f.org2, URL: "https://a.example.com/x"},
	}
	write(t, e, func(t2 *tx) error {
		if _, err := t2.WebhookEndpoints().Get(f.org, eps[0].URL); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("endpoint never stored: %v; want store.ErrNotFound", err)
		}
		for _, ep := range eps {
			if err := t2.WebhookEndpoints().Put(ep); err != nil {
				return err
			}
		}
		return nil
	})
	read(t, e, func(t2 *tx) error {
		got, err := t2.WebhookEndpoints().Get(f.org, eps[0].URL)
		if err != nil || !reflect.DeepEqual(got, eps[0]) {
			t.Errorf("endpoint = %+v, %v; want %+v", got, err, eps[0])
		}
		list, err := t2.WebhookEndpoints().List(f.org)
		if want := []store.WebhookEndpoint{*eps[1], *eps[2], *eps[0]}; err != nil || !reflect.DeepEqual(list, want) {
			t.Errorf("endpoints = %+v, %v; want %+v", list, err, want)
		}
		return nil
	})
	// Put replaces the state.
	cleared := &store.WebhookEndpoint{OrganizationID: f.org, URL: eps[2].URL}
	write(t, e, func(t2 *tx) error { return t2.WebhookEndpoints().Put(cleared) })
	read(t, e, func(t2 *tx) error {
		got, err := t2.WebhookEndpoints().Get(f.org, eps[2].URL)
		if err != nil || !reflect.DeepEqual(got, cleared) {
			t.Errorf("enabled again = %+v, %v; want %+v", got, err, cleared)
		}
		return nil
	})
}

func TestWebhookReceivers(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	write(t, e, func(t2 *tx) error {
		if err := t2.WebhookReceivers().Put(f.org, []string{store.WebhookTypeEvent, store.WebhookTypeGPS}); err != nil {
			return err
		}
		return t2.WebhookReceivers().Put(f.org2, []string{store.WebhookTypeAlarms})
	})
	has := func(org int64, typ string) bool {
		var ok bool
		read(t, e, func(t2 *tx) (err error) { ok, err = t2.WebhookReceivers().Has(org, typ); return err })
		return ok
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
	// Put replaces the types; none removes the entry.
	write(t, e, func(t2 *tx) error {
		if err := t2.WebhookReceivers().Put(f.org, []string{store.WebhookTypeGPS, store.WebhookTypeSystemMessages}); err != nil {
			return err
		}
		return t2.WebhookReceivers().Put(f.org2, nil)
	})
	if has(f.org, store.WebhookTypeEvent) || !has(f.org, store.WebhookTypeGPS) || !has(f.org, store.WebhookTypeSystemMessages) {
		t.Error("after Put the types are not the new ones")
	}
	if has(f.org2, store.WebhookTypeAlarms) {
		t.Error("an organization without types still has alarms")
	}

	// Organizations: those with settings, a subscription or an entry.
	write(t, e, func(t2 *tx) error {
		if err := t2.WebhookSettings().Put(&store.WebhookSettings{OrganizationID: f.org3}); err != nil {
			return err
		}
		return t2.WebhookSubscriptions().Insert(&store.WebhookSubscription{OrganizationID: f.org3, IMEI: "490154203237518",
			URL: "https://a.example.com", Type: store.WebhookTypeGPS, CreatedAt: webhookTime, UpdatedAt: webhookTime})
	})
	read(t, e, func(t2 *tx) error {
		orgs, err := t2.WebhookReceivers().Organizations()
		if want := []int64{f.org, f.org3}; err != nil || !reflect.DeepEqual(orgs, want) {
			t.Errorf("Organizations = %v, %v; want %v", orgs, err, want)
		}
		return nil
	})
	write(t, e, func(t2 *tx) error {
		return t2.WebhookSubscriptions().Insert(&store.WebhookSubscription{OrganizationID: f.org2, IMEI: "490154203237518",
			URL: "https://a.example.com", Type: store.WebhookTypeGPS, CreatedAt: webhookTime, UpdatedAt: webhookTime})
	})
	read(t, e, func(t2 *tx) error {
		orgs, err := t2.WebhookReceivers().Organizations()
		if want := []int64{f.org, f.org2, f.org3}; err != nil || !reflect.DeepEqual(orgs, want) {
			t.Errorf("Organizations = %v, %v; want %v", orgs, err, want)
		}
		return nil
	})
}

func TestWebhookOutboxCounters(t *testing.T) {
	t.Parallel()
	e, _ := webhookEngine(t)
	read(t, e, func(t2 *tx) error {
		c, err1 := t2.WebhookOutbox().Cursor()
		g, err2 := t2.WebhookOutbox().Generation()
		if c != 0 || g != 0 || err1 != nil || err2 != nil {
			t.Errorf("new outbox: cursor %d (%v), generation %d (%v); want 0 and 0", c, err1, g, err2)
		}
		return nil
	})
	write(t, e, func(t2 *tx) error {
		if err := t2.WebhookOutbox().SetCursor(41); err != nil {
			return err
		}
		if err := t2.WebhookOutbox().IncrementGeneration(); err != nil {
			return err
		}
		return t2.WebhookOutbox().IncrementGeneration()
	})
	read(t, e, func(t2 *tx) error {
		c, err1 := t2.WebhookOutbox().Cursor()
		g, err2 := t2.WebhookOutbox().Generation()
		if c != 41 || g != 2 || err1 != nil || err2 != nil {
			t.Errorf("cursor %d (%v), generation %d (%v); want 41 and 2", c, err1, g, err2)
		}
		return nil
	})
}
