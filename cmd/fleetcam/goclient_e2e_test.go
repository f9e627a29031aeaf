package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/clients/go/fleetcam"
	"github.com/fleetcam/fleetcam/devicesim"
)

// TestGeneratedGoClient drives a running fleetcam with the Go client
// generated from the OpenAPI document (clients/go/fleetcam), as a partner
// integration would: a refused and an accepted sign-in, an organization, a
// device, then the event its dashcam sends, each answer decoded into the
// document's types.
func TestGeneratedGoClient(t *testing.T) {
	t.Parallel()
	e := startEnv(t)
	ctx := context.Background()
	c, err := fleetcam.NewClientWithResponses("http://" + e.a.httpAddr.String())
	if err != nil {
		t.Fatal(err)
	}

	refused, err := c.PostAuthenticateWithResponse(ctx, fleetcam.PostAuthenticateJSONRequestBody{
		Email: partnerEmail, Password: "Wrong-password-1"})
	if err != nil {
		t.Fatal(err)
	}
	if refused.StatusCode() != http.StatusUnauthorized || refused.JSON401 == nil ||
		refused.JSON401.Error != "UnauthorizedError" || refused.JSON401.RequestId == "" {
		t.Fatalf("wrong password: %d %s", refused.StatusCode(), refused.Body)
	}
	signin, err := c.PostAuthenticateWithResponse(ctx, fleetcam.PostAuthenticateJSONRequestBody{
		Email: partnerEmail, Password: partnerPassword})
	if err != nil {
		t.Fatal(err)
	}
	if signin.JSON200 == nil || signin.JSON200.Data == nil || signin.JSON200.Data.Token == nil {
		t.Fatalf("sign-in: %d %s", signin.StatusCode(), signin.Body)
	}
	auth := fleetcam.BearerToken(*signin.JSON200.Data.Token)

	org, err := c.PostOrganizationWithResponse(ctx, fleetcam.PostOrganizationJSONRequestBody{Name: "Generated Client Haulage"}, auth)
	if err != nil {
		t.Fatal(err)
	}
	if org.JSON200 == nil || org.JSON200.Data.OrganizationId == 0 {
		t.Fatalf("create organization: %d %s", org.StatusCode(), org.Body)
	}
	orgID := org.JSON200.Data.OrganizationId

	imei := testIMEIs(t, "35693810000077", 1)[0]
	added, err := c.PostOrganizationDevicesWithResponse(ctx, orgID,
		fleetcam.PostOrganizationDevicesJSONRequestBody{Imei: imei, Name: "Van 3"}, auth)
	if err != nil {
		t.Fatal(err)
	}
	if added.JSON200 == nil || added.JSON200.Data.Imei != imei || added.JSON200.Data.Name != "Van 3" {
		t.Fatalf("add device: %d %s", added.StatusCode(), added.Body)
	}
	// Without a token the typed 401 answers.
	if anon, err := c.PostOrganizationDevicesWithResponse(ctx, orgID,
		fleetcam.PostOrganizationDevicesJSONRequestBody{Imei: imei, Name: "Van 3"}); err != nil || anon.JSON401 == nil {
		t.Fatalf("add device without a token: %v %+v", err, anon)
	}

	e.imei = imei
	dev := e.connect(nil)
	e.waitOnline()
	ev, err := dev.Emit(ctx, devicesim.EventSpec{Type: "deceleration"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(ev.Time).UTC()
	params := &fleetcam.GetDeviceEventsParams{Start: at.Add(-time.Hour), End: at.Add(time.Hour)}
	var got *fleetcam.Event
	eventually(t, "the event in the device's event list", func() bool {
		list, err := c.GetDeviceEventsWithResponse(ctx, imei, params, auth)
		if err != nil {
			t.Fatal(err)
		}
		if list.JSON200 == nil || list.JSON200.Data == nil {
			t.Fatalf("list events: %d %s", list.StatusCode(), list.Body)
		}
		for _, x := range *list.JSON200.Data {
			if x.EventType == "deceleration" {
				got = &x
			}
		}
		return got != nil
	})
	if got.Imei == nil || *got.Imei != imei || !got.Time.Equal(at) {
		t.Fatalf("listed event %+v, want the device's deceleration at %s", got, at)
	}
}
