package cloudapi

import (
	"net/http"
	"slices"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// recipientsOf lists a device's recipients through the API as "eventType email".
func (e *fleetEnv) recipientsOf(imei, query, token string) []string {
	e.t.Helper()
	r := e.do("GET", devPath(imei, "/notification-recipients"+query), token, nil).want(http.StatusOK)
	out := []string{}
	for i := range r.list("recipients") {
		at := "recipients." + itoa(int64(i))
		if r.num(at+".status") != recipientEnabled {
			e.t.Fatalf("recipient %d has status %v", i, r.num(at+".status"))
		}
		out = append(out, r.str(at+".eventType")+" "+r.str(at+".recipient"))
	}
	return out
}

func TestEventRecipients(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	imei := e.devices[0]
	put := devPath(imei, "/events/tailgating/notification-recipients")
	body := map[string]any{"notificationRecipients": []string{"ops@one.example", "night@one.example"}}
	e.do("PUT", put, e.adminToken, body).want(http.StatusOK)
	e.do("PUT", devPath(imei, "/events/cellPhoneUse/notification-recipients"), e.partnerToken,
		map[string]any{"notificationRecipients": []string{"ops@one.example"}}).want(http.StatusOK)
	want := []string{"cellPhoneUse ops@one.example", "tailgating ops@one.example", "tailgating night@one.example"}
	if got := e.recipientsOf(imei, "", e.viewerToken); !slices.Equal(got, want) {
		t.Fatalf("recipients %v, want %v", got, want)
	}
	if got := e.recipientsOf(imei, "?eventType=tailgating", e.adminToken); !slices.Equal(got, want[1:]) {
		t.Fatalf("tailgating recipients %v", got)
	}
	entries, _, err := e.db.AuditLog(t.Context(), store.AuditFilter{Action: "device.notificationRecipients", EntityID: imei}, store.Page{})
	if err != nil || len(entries) != 2 {
		t.Fatalf("audit entries %v %v", entries, err)
	}

	// Removing from one event type, then from every type.
	e.do("DELETE", devPath(imei, "/notification-recipients/ops@one.example?eventType=tailgating"), e.adminToken, nil).want(http.StatusOK)
	if got := e.recipientsOf(imei, "", e.adminToken); !slices.Equal(got, []string{"cellPhoneUse ops@one.example", "tailgating night@one.example"}) {
		t.Fatalf("after removing from tailgating %v", got)
	}
	e.do("DELETE", devPath(imei, "/notification-recipients/ops@one.example"), e.adminToken, nil).want(http.StatusOK)
	if got := e.recipientsOf(imei, "", e.adminToken); !slices.Equal(got, []string{"tailgating night@one.example"}) {
		t.Fatalf("after removing everywhere %v", got)
	}
	e.do("DELETE", devPath(imei, "/notification-recipients/ops@one.example"), e.adminToken, nil).wantError(http.StatusNotFound, nameNotFound)

	// Tenancy and access levels.
	del := devPath(imei, "/notification-recipients/night@one.example")
	e.do("PUT", put, e.viewerToken, body).wantError(http.StatusForbidden, nameForbidden)
	e.do("DELETE", del, e.viewerToken, nil).wantError(http.StatusForbidden, nameForbidden)
	e.do("PUT", put, e.rivalToken, body).wantError(http.StatusNotFound, nameNotFound)
	e.do("DELETE", del, e.org2Token, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("GET", devPath(imei, "/notification-recipients"), e.org2Token, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("GET", devPath(imei, "/notification-recipients"), e.rivalToken, nil).wantError(http.StatusNotFound, nameNotFound)

	// Bad input names the field.
	many := make([]string, store.MaxEventRecipients+1)
	for i := range many {
		many[i] = "r" + itoa(int64(i)) + "@one.example"
	}
	for _, bad := range []struct {
		method, path string
		body         any
		field        string
	}{
		{"PUT", devPath(imei, "/events/noSuchEvent/notification-recipients"), body, "eventType"},
		{"PUT", put, map[string]any{}, "notificationRecipients"},
		{"PUT", put, map[string]any{"notificationRecipients": []string{"ops@one.example", "nobody"}}, "notificationRecipients[1]"},
		{"PUT", put, map[string]any{"notificationRecipients": many}, "notificationRecipients"},
		{"GET", devPath(imei, "/notification-recipients?eventType=noSuchEvent"), nil, "eventType"},
		{"DELETE", devPath(imei, "/notification-recipients/nobody"), nil, "email"},
		{"DELETE", del + "?eventType=noSuchEvent", nil, "eventType"},
	} {
		e.do(bad.method, bad.path, e.adminToken, bad.body).wantError(http.StatusBadRequest, nameBadRequest, bad.field)
	}
	if got := e.recipientsOf(imei, "", e.adminToken); !slices.Equal(got, []string{"tailgating night@one.example"}) {
		t.Fatalf("refused writes changed the recipients: %v", got)
	}
	// [] removes the event type's recipients.
	e.do("PUT", put, e.adminToken, map[string]any{"notificationRecipients": []string{}}).want(http.StatusOK)
	if got := e.recipientsOf(imei, "", e.adminToken); len(got) != 0 {
		t.Fatalf("after clearing %v", got)
	}
}

func TestBulkEventRecipients(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	path := "/v2/devices/events/tailgating/notification-recipients"
	list := []string{"ops@one.example"}

	// An IMEI list: the caller's devices change, the others are rejected.
	r := e.do("PUT", path, e.adminToken, map[string]any{"imeis": []string{e.devices[0], e.devices[3], e.rivalDevices[0]},
		"notificationRecipients": list}).want(http.StatusOK)
	if got := r.list("success"); len(got) != 1 || got[0] != e.devices[0] {
		t.Fatalf("success %v", got)
	}
	if got := r.list("rejected"); len(got) != 2 || r.num("rejected.0.errorCode") != rejectNotFound {
		t.Fatalf("rejected %s", r.raw)
	}
	for _, imei := range e.devices[1:] {
		if got := e.recipientsOf(imei, "", e.partnerToken); len(got) != 0 {
			t.Fatalf("device %s not named got %v", imei, got)
		}
	}
	if got := e.recipientsOf(e.rivalDevices[0], "", e.rivalToken); len(got) != 0 {
		t.Fatalf("the rival's device got %v", got)
	}

	// An organization: every device of it, and no other.
	e.do("PUT", path, e.partnerToken, map[string]any{"organizationId": e.org.ID,
		"notificationRecipients": []string{"fleet@one.example"}}).want(http.StatusOK)
	for _, imei := range e.devices[:3] {
		if got := e.recipientsOf(imei, "", e.partnerToken); !slices.Equal(got, []string{"tailgating fleet@one.example"}) {
			t.Fatalf("device %s has %v", imei, got)
		}
	}
	if got := e.recipientsOf(e.devices[3], "", e.partnerToken); len(got) != 0 {
		t.Fatalf("the other organization's device got %v", got)
	}
	entries, _, err := e.db.AuditLog(t.Context(), store.AuditFilter{Action: "device.notificationRecipients"}, store.Page{})
	if err != nil || len(entries) != 4 {
		t.Fatalf("%d audit entries (%v), want 4", len(entries), err)
	}

	org := map[string]any{"organizationId": e.org.ID, "notificationRecipients": list}
	e.do("PUT", path, e.viewerToken, org).wantError(http.StatusForbidden, nameForbidden)
	e.do("PUT", path, e.rivalToken, org).wantError(http.StatusNotFound, nameNotFound)
	e.do("PUT", path, e.org2Token, org).wantError(http.StatusNotFound, nameNotFound)
	for _, bad := range []struct {
		path  string
		body  any
		field string
	}{
		{"/v2/devices/events/noSuchEvent/notification-recipients", org, "eventType"},
		{path, map[string]any{"organizationId": e.org.ID}, "notificationRecipients"},
		{path, map[string]any{"notificationRecipients": list}, "imeis"},
		{path, map[string]any{"organizationId": e.org.ID, "notificationRecipients": []string{"x"}}, "notificationRecipients[0]"},
		{path, map[string]any{"organizationId": e.org.ID, "groupIds": []int{0}, "notificationRecipients": list}, "groupIds[0]"},
	} {
		e.do("PUT", bad.path, e.partnerToken, bad.body).wantError(http.StatusBadRequest, nameBadRequest, bad.field)
	}
	if got := e.recipientsOf(e.devices[1], "", e.partnerToken); !slices.Equal(got, []string{"tailgating fleet@one.example"}) {
		t.Fatalf("refused writes changed the recipients: %v", got)
	}
}
