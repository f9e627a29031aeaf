package postgres

import (
	"encoding/json"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

func TestWithoutNUL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"a":"x"}`:                 `{"a":"x"}`,
		`{"a":"x\u0000y\u0000"}`:    `{"a":"x\ufffdy\ufffd"}`,
		`{"a":"\\u0000"}`:           `{"a":"\\u0000"}`, // a backslash, then "u0000"
		`{"a":"\\\u0000","b":"\""}`: `{"a":"\\\ufffd","b":"\""}`,
		`{"\u00001":"\u0001"}`:      `{"\ufffd1":"\u0001"}`,
	} {
		if got := string(withoutNUL([]byte(in))); got != want {
			t.Errorf("withoutNUL(%s) = %s; want %s", in, got, want)
		}
	}
}

// TestNULCharactersAreStored writes the character U+0000, which JSON and
// Go strings hold and PostgreSQL's text and jsonb do not, where a device
// or a receiver may send it: the writes succeed, with U+FFFD in its place,
// and a delivery's body keeps it as it is.
func TestNULCharactersAreStored(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	msg := store.Message{Kind: store.MessageEvent, OrganizationID: f.org, Time: webhookTime,
		Event: &store.EventFact{ID: 1, Type: "x", Metadata: "a\x00b"}}
	entry := store.AuditEntry{Time: webhookTime, Action: "a", EntityType: "e", EntityID: "1",
		After: json.RawMessage(`{"name":"a\u0000b"}`)}
	d := pendingDelivery(f.org, "https://r.example.com", "", webhookTime)
	d.Body = []byte(`{"metadata":"a\u0000b"}`)
	d.RecordAttempt(store.DeliveryAttempt{Time: webhookTime, StatusCode: 500, Error: "HTTP 500: a\x00b"})
	ep := store.WebhookEndpoint{OrganizationID: f.org, URL: d.URL, LastError: "HTTP 500: a\x00b", LastFailureAt: webhookTime}
	write(t, e, func(t2 *tx) error {
		if err := t2.Messages().Append(&msg); err != nil {
			return err
		}
		if err := t2.AuditEntries().Append(&entry); err != nil {
			return err
		}
		if err := t2.Deliveries().Insert(d); err != nil {
			return err
		}
		return t2.WebhookEndpoints().Put(&ep)
	})
	read(t, e, func(t2 *tx) error {
		msgs, err := t2.Messages().After(0, 0)
		if err != nil || len(msgs) != 1 || msgs[0].Event.Metadata != "a\uFFFDb" {
			t.Errorf("message %+v, %v; want the metadata with U+FFFD", msgs, err)
		}
		entries, _, err := t2.AuditEntries().List(t.Context(), store.AuditFilter{}, store.Page{})
		if err != nil || len(entries) != 1 || !jsonEqual(t, entries[0].After, []byte(`{"name":"a\ufffdb"}`)) {
			t.Errorf("audit entries %+v, %v; want the name with U+FFFD", entries, err)
		}
		got, err := t2.Deliveries().Get(d.ID)
		if err != nil || string(got.Body) != string(d.Body) || got.LastError != "HTTP 500: a\uFFFDb" ||
			len(got.Log) != 1 || got.Log[0].Error != "HTTP 500: a\uFFFDb" {
			t.Errorf("delivery %+v, %v; want the body as it was and the errors with U+FFFD", got, err)
		}
		gotEp, err := t2.WebhookEndpoints().Get(f.org, d.URL)
		if err != nil || gotEp.LastError != "HTTP 500: a\uFFFDb" || !gotEp.LastFailureAt.Equal(webhookTime) {
			t.Errorf("endpoint %+v, %v; want the error with U+FFFD", gotEp, err)
		}
		return nil
	})
}
