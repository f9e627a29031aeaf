package cloudapi

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/fleetcam/fleetcam/cloudapi/webhooks"
	"github.com/fleetcam/fleetcam/store"
)

// A store error answers the status and name of its kind and its message,
// however it is wrapped; webhook validation answers a 400 naming the field.
func TestStatusOfStoreErrors(t *testing.T) {
	badWebhook := webhooks.ValidateSettings(&store.WebhookSettings{GPSURLs: []string{"ftp://x"}}, false)
	tests := []struct {
		name    string
		err     error
		status  int
		errName string
		message string
	}{
		{"not found", store.NotFound("organization %d", 7), http.StatusNotFound, nameNotFound, "organization 7 not found"},
		{"wrapped not found", fmt.Errorf("device %s: %w", "x", store.NotFound("group %d", 3)), http.StatusNotFound, nameNotFound, "group 3 not found"},
		{"conflict", store.Conflict("user email %s already exists", "a@b.c"), http.StatusConflict, nameConflict, "user email a@b.c already exists"},
		{"invalid field", store.Invalid("lat", "must be from -90 to 90"), http.StatusBadRequest, nameBadRequest, "lat must be from -90 to 90"},
		{"invalid record", store.Invalid("", "organization without a partner"), http.StatusBadRequest, nameBadRequest, "organization without a partner"},
		{"webhook settings", badWebhook, http.StatusBadRequest, nameBadRequest, "gpsWebhookUrl[0] must be an absolute http or https URL"},
		{"unknown kind", &store.Error{Kind: errors.New("other"), Rule: "secret"}, http.StatusInternalServerError, nameUnknown, "unknown error has occurred"},
		{"plain error", errors.New("disk on fire"), http.StatusInternalServerError, nameUnknown, "unknown error has occurred"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ae := statusOf(tc.err)
			if ae.Status != tc.status || ae.Name != tc.errName || ae.Message != tc.message {
				t.Fatalf("statusOf(%v) = %d %s %q, want %d %s %q", tc.err, ae.Status, ae.Name, ae.Message, tc.status, tc.errName, tc.message)
			}
		})
	}
}
