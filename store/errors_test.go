package store_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// Every store error matches its own sentinel and no other, through any
// wrapping, and reads as before: the message, then the sentinel's text.
func TestErrorKindsAndTexts(t *testing.T) {
	t.Parallel()
	sentinels := []error{ErrNotFound, ErrConflict, ErrInvalid}
	tests := []struct {
		name    string
		err     error
		kind    error
		field   string
		message string
		text    string
	}{
		{"not found", NotFound("organization %d", 7), ErrNotFound, "", "organization 7 not found", "organization 7: store: not found"},
		{"unnamed not found", NotFound(""), ErrNotFound, "", "not found", "store: not found"},
		{"conflict", Conflict("device %s is already in an organization", "x"), ErrConflict, "",
			"device x is already in an organization", "device x is already in an organization: store: conflict"},
		{"invalid field", Invalid("lat", "must be from %d to %d", -90, 90), ErrInvalid, "lat",
			"lat must be from -90 to 90", "lat must be from -90 to 90: store: invalid"},
		{"invalid record", Invalid("", "organization without a partner"), ErrInvalid, "",
			"organization without a partner", "organization without a partner: store: invalid"},
		{"rule kept verbatim without arguments", Invalid("url", "must not hold 100%"), ErrInvalid, "url",
			"url must not hold 100%", "url must not hold 100%: store: invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wrapped := fmt.Errorf("outer: %w", tc.err)
			for _, s := range sentinels {
				if got := errors.Is(wrapped, s); got != (s == tc.kind) {
					t.Errorf("errors.Is(%v, %v) = %v", wrapped, s, got)
				}
			}
			var se *Error
			if !errors.As(wrapped, &se) {
				t.Fatalf("errors.As(%v) found no *Error", wrapped)
			}
			if se.Kind != tc.kind || se.Field != tc.field {
				t.Errorf("kind %v field %q, want %v %q", se.Kind, se.Field, tc.kind, tc.field)
			}
			if se.Message() != tc.message {
				t.Errorf("message %q, want %q", se.Message(), tc.message)
			}
			if tc.err.Error() != tc.text {
				t.Errorf("text %q, want %q", tc.err.Error(), tc.text)
			}
		})
	}
}

// The store's own lookups and checks answer typed errors that name what is
// missing and which field breaks which rule.
func TestStoreAnswersTypedErrors(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db, clock := openTest(t)
		partnerID, orgID := seed(t, db)
		imei := eventIMEI(1)
		var missingDevice, badIMEI, badPoint, unnamed error
		mustUpdate(t, db, func(tx *Tx) error {
			_, missingDevice = tx.Device(imei)
			badIMEI = tx.AddDevice(&Device{IMEI: "12345", PartnerID: partnerID, OrganizationID: orgID})
			_, unnamed = tx.WebhookSubscription(orgID, 99)
			if err := tx.AddDevice(&Device{IMEI: imei, PartnerID: partnerID, OrganizationID: orgID}); err != nil {
				return err
			}
			dev, err := tx.Device(imei)
			if err != nil {
				return err
			}
			_, badPoint = tx.AddGPS(dev, []GPSPoint{{Time: clock.Now(), Lat: 1}, {Time: clock.Now().Add(time.Second), Lat: 91}})
			return nil
		})
		tests := []struct {
			name        string
			err         error
			kind        error
			field, rule string
			message     string
		}{
			{"missing device", missingDevice, ErrNotFound, "", "", "device " + imei + " not found"},
			{"missing webhook", unnamed, ErrNotFound, "", "", "webhook 99 not found"},
			{"bad imei", badIMEI, ErrInvalid, "imei", `"12345" ` + RuleIMEI, `imei "12345" ` + RuleIMEI},
			{"bad gps sample", badPoint, ErrInvalid, "samples[1].lat", "must be from -90 to 90", "samples[1].lat must be from -90 to 90"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var se *Error
				if !errors.As(tc.err, &se) {
					t.Fatalf("error %v (%T) is not an *Error", tc.err, tc.err)
				}
				if se.Kind != tc.kind || se.Field != tc.field || se.Rule != tc.rule || se.Message() != tc.message {
					t.Fatalf("got %+v message %q, want kind %v field %q rule %q message %q",
						*se, se.Message(), tc.kind, tc.field, tc.rule, tc.message)
				}
			})
		}
	})
}
