package store_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func TestEventRecipients(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newSettingsFixture(t, 2)
		imei := f.imeis[0]
		list := func(eventType string) []EventRecipient {
			t.Helper()
			var out []EventRecipient
			if err := f.db.View(t.Context(), func(tx *Tx) (err error) { out, err = tx.EventRecipients(imei, eventType); return err }); err != nil {
				t.Fatal(err)
			}
			return out
		}
		f.update(func(tx *Tx) error {
			return tx.SetEventRecipients(imei, "tailgating", []string{"b@example.com", " a@example.com", "b@example.com"})
		})
		f.update(func(tx *Tx) error { return tx.SetEventRecipients(imei, "cellPhoneUse", []string{"c@example.com"}) })
		want := []EventRecipient{{Email: "c@example.com", EventType: "cellPhoneUse"},
			{Email: "b@example.com", EventType: "tailgating"}, {Email: "a@example.com", EventType: "tailgating"}}
		if got := list(""); !slices.Equal(got, want) {
			t.Fatalf("recipients %+v, want %+v", got, want)
		}
		if got := list("tailgating"); !slices.Equal(got, want[1:]) {
			t.Fatalf("tailgating recipients %+v", got)
		}
		if n := len(f.audit("device.notificationRecipients")); n != 2 {
			t.Fatalf("%d audit entries, want 2", n)
		}
		// The other device has none.
		if err := f.db.View(t.Context(), func(tx *Tx) error {
			other, err := tx.EventRecipients(f.imeis[1], "")
			if err == nil && len(other) != 0 {
				err = fmt.Errorf("other device has %+v", other)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}

		// Replacing keeps only the new list; deleting from every type or one.
		f.update(func(tx *Tx) error {
			return tx.SetEventRecipients(imei, "tailgating", []string{"a@example.com", "c@example.com"})
		})
		f.update(func(tx *Tx) error { return tx.DeleteEventRecipient(imei, "c@example.com", "") })
		if got := list(""); !slices.Equal(got, []EventRecipient{{Email: "a@example.com", EventType: "tailgating"}}) {
			t.Fatalf("after delete %+v", got)
		}
		err := f.db.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error {
			return tx.DeleteEventRecipient(imei, "a@example.com", "cellPhoneUse")
		})
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleting a recipient of another type: %v, want ErrNotFound", err)
		}
		f.update(func(tx *Tx) error { return tx.SetEventRecipients(imei, "tailgating", nil) })
		if got := list(""); len(got) != 0 {
			t.Fatalf("after clearing %+v", got)
		}

		many := make([]string, MaxEventRecipients+1)
		for i := range many {
			many[i] = fmt.Sprintf("r%d@example.com", i)
		}
		bad := []struct {
			eventType string
			emails    []string
			field     string
		}{
			{"noSuchEvent", []string{"a@example.com"}, "eventType"},
			{"tailgating", []string{"a@example.com", "not an address"}, "notificationRecipients[1]"},
			{"tailgating", []string{"a@localhost"}, "notificationRecipients[0]"},
			{"tailgating", many, "notificationRecipients"},
		}
		for _, b := range bad {
			err := f.db.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error { return tx.SetEventRecipients(imei, b.eventType, b.emails) })
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), b.field) {
				t.Fatalf("%s %v: %v, want ErrInvalid naming %s", b.eventType, b.emails, err, b.field)
			}
		}
		err = f.db.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error {
			return tx.SetEventRecipients("356000000009999", "tailgating", []string{"a@example.com"})
		})
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown device: %v, want ErrNotFound", err)
		}
	})
}
