package cloudapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/webhooks"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
	"github.com/gin-gonic/gin"
)

// A store error answers the status and name of its kind and its message,
// however it is wrapped; webhook validation answers a 400 naming the field.
func TestStatusOfStoreErrors(t *testing.T) {
	t.Parallel()
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
		{"device on an unreachable node", fmt.Errorf("reboot: %w", ErrDeviceUnreachable), http.StatusServiceUnavailable, nameUnavailable,
			"the device is not connected to this node and the other nodes of the cluster cannot be reached now; retry shortly"},
		{"conflict outlasting its retries", fmt.Errorf("%w: could not serialize access (SQLSTATE 40001)", store.ErrTxConflict),
			http.StatusServiceUnavailable, nameUnavailable, "other writes to the same records kept the store busy; retry shortly"},
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

// A call whose client went away, or whose time ran out, fails with the
// store's error for its context: that answers 503 and is logged at info,
// since nothing is wrong with the server. The same errors from an inner
// operation of a call that is still live stay errors.
func TestFailOnAbandonedCall(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, stop := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer stop()
	write := func(ctx context.Context) error {
		return db.Update(ctx, store.Actor{Source: "test"}, func(tx *store.Tx) error {
			_, err := tx.CreatePartner("Never")
			return err
		})
	}
	tests := []struct {
		name     string
		call     context.Context
		err      error
		errName  string
		message  string
		logLevel string
	}{
		{"client went away", cancelled, write(cancelled), nameUnavailable, "the request was cancelled", "INFO"},
		{"call timed out", expired, write(expired), nameTimeout, "the request took too long; paginate with limit and offset", "INFO"},
		{"inner operation cancelled", t.Context(), write(cancelled), nameUnavailable, "the request was cancelled", "ERROR"},
		{"inner operation timed out", t.Context(), write(expired), nameTimeout, "the request took too long; paginate with limit and offset", "ERROR"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			s := &Server{log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
			w := httptest.NewRecorder()
			c, _ := gin.CreateTestContext(w)
			c.Request = httptest.NewRequest("POST", "/v2/partners", nil).WithContext(tc.call)
			s.fail(c, tc.err)
			var body errorBody
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if w.Code != http.StatusServiceUnavailable || body.Error != tc.errName || body.Message != tc.message {
				t.Fatalf("answer %d %+v, want 503 %s %q", w.Code, body, tc.errName, tc.message)
			}
			var entry struct{ Level string }
			if err := json.Unmarshal(logs.Bytes(), &entry); err != nil || entry.Level != tc.logLevel {
				t.Fatalf("logged %q (%v), want one entry at %s", logs.String(), err, tc.logLevel)
			}
		})
	}
	db.View(t.Context(), func(tx *store.Tx) error {
		if n := tx.PartnerCount(); n != 0 {
			t.Errorf("the abandoned writes left %d partners", n)
		}
		return nil
	})
}
