package cloudapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// sharedOrg is the host's organization "Shared fleet", shared with a new
// partner B that accepted: B's id and token, and the organization.
func (e *testEnv) sharedOrg() (int64, string, createdOrg) {
	e.t.Helper()
	idB, tokB := e.newPartner("Partner B", "b@other.example")
	org := e.newOrg(e.partnerToken, "Shared fleet")
	e.shareOrg(org.id, idB, tokB)
	return idB, tokB, org
}

// shareOrg shares organization orgID of the first partner with guest (id
// and token): the first partner invites, the guest accepts.
func (e *testEnv) shareOrg(orgID, guestID int64, guestToken string) {
	e.t.Helper()
	e.do("PATCH", orgPath(orgID, ""), e.partnerToken, map[string]any{"exclusivePartnerOnly": false, "partnerIds": []int64{guestID}}).want(http.StatusOK)
	e.do("POST", invitationPath(orgID, "/accept"), guestToken, nil).want(http.StatusOK)
}

// invitationPath is the path of the invitation to share organization orgID, plus rest.
func invitationPath(orgID int64, rest string) string {
	return "/v2/partners/organization-invitations/" + itoa(orgID) + rest
}

// TestGuestPartnerWebhookDeliveries: a guest partner of a shared organization
// sees only the deliveries of messages about its own devices, sent since they
// joined; counts and pages cover just those. The host sees all.
func TestGuestPartnerWebhookDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, tokB, org := e.sharedOrg()
	devA := e.newDevice(e.partnerToken, org.id, testIMEI(1), "A truck")
	moved := e.newDevice(e.partnerToken, org.id, testIMEI(3), "A van, later B's")
	joined := e.clock.Now()
	e.clock.Advance(time.Hour)
	e.do("DELETE", orgPath(org.id, "/devices/"+moved), e.partnerToken, nil).want(http.StatusOK)
	devB := e.newDevice(tokB, org.id, testIMEI(2), "B van")
	e.newDevice(tokB, org.id, moved, "B's now")

	deliver := func(imei string, at time.Time) {
		t.Helper()
		err := e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
			return tx.EnqueueDelivery(&store.Delivery{OrganizationID: org.id, URL: "https://host.example.com/hook",
				WebhookID: "msg_" + imei, Type: "event", IMEI: imei, MessageTime: at, Body: json.RawMessage(`{"imei":"` + imei + `"}`)})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	now := e.clock.Now()
	deliver(moved, joined) // while the host held it
	deliver(devA, now)
	deliver(devB, now)
	deliver("", now) // about the organization, not a device
	deliver(moved, now)

	path := orgPath(org.id, "/webhook-deliveries")
	if n := e.do("GET", path, e.partnerToken, nil).want(http.StatusOK).num("metadata.count"); n != 5 {
		t.Fatalf("the host counts %v deliveries, want 5", n)
	}
	r := e.do("GET", path, tokB, nil).want(http.StatusOK)
	if r.num("metadata.count") != 2 || r.str("data.0.imei") != moved || r.str("data.1.imei") != devB {
		t.Fatalf("the guest lists %s", r.raw)
	}
	if bytes.Contains(r.raw, []byte(devA)) {
		t.Fatalf("the guest sees a delivery about the host's device: %s", r.raw)
	}
	page := e.do("GET", path+"?limit=1&offset=1", tokB, nil).want(http.StatusOK)
	if page.num("metadata.count") != 2 || len(page.list("data")) != 1 || page.str("data.0.imei") != devB {
		t.Fatalf("the guest's second page %s", page.raw)
	}
	if n := e.do("GET", path+"?imei="+devA, tokB, nil).want(http.StatusOK).num("metadata.count"); n != 0 {
		t.Fatalf("the guest filters %v deliveries of the host's device", n)
	}
}

// TestOrganizationSharingInvitation: naming a partner in partnerIds invites
// it, with the same answer whether or not such a partner exists; the
// organization is shared only once the invited partner accepts, and a
// declined invitation shares nothing. Every step is audited.
func TestOrganizationSharingInvitation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	idB, tokB := e.newPartner("Partner B", "b@other.example")
	_, tokC := e.newPartner("Partner C", "c@other.example")
	org := e.newOrg(e.partnerToken, "Fleet")
	ghost := e.newOrg(e.partnerToken, "Fleet")
	declined := e.newOrg(e.partnerToken, "Other fleet")
	const unknown = 4242

	invite := func(orgID, partnerID int64) map[string]any {
		t.Helper()
		r := e.do("PATCH", orgPath(orgID, ""), e.partnerToken, map[string]any{"exclusivePartnerOnly": false, "partnerIds": []int64{partnerID}}).want(http.StatusOK)
		data := r.get("data").(map[string]any)
		if ids := r.list("data.partnerIds"); len(ids) != 1 || r.id("data.partnerIds.0") != e.partnerID ||
			len(r.list("data.invitedPartnerIds")) != 1 || r.id("data.invitedPartnerIds.0") != partnerID {
			t.Fatalf("invitation of partner %d: %s", partnerID, r.raw)
		}
		delete(data, "id")
		delete(data, "invitedPartnerIds")
		return data
	}
	known, ghostly := invite(org.id, idB), invite(ghost.id, unknown)
	if k, g := fmt.Sprint(known), fmt.Sprint(ghostly); k != g {
		t.Fatalf("inviting an existing and an unknown partner answer differently:\n%s\n%s", k, g)
	}
	invite(declined.id, idB)

	// Nothing is shared before B accepts.
	if n := e.do("GET", "/v2/organizations", tokB, nil).want(http.StatusOK).num("metadata.count"); n != 0 {
		t.Fatalf("partner B sees %v organizations before accepting", n)
	}
	e.do("GET", orgPath(org.id, ""), tokB, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("POST", orgPath(org.id, "/devices"), tokB, map[string]any{"imei": testIMEI(1), "name": "B1"}).wantError(http.StatusNotFound, nameNotFound)

	l := e.do("GET", "/v2/partners/organization-invitations", tokB, nil).want(http.StatusOK)
	if l.num("metadata.count") != 2 || l.id("data.0.organizationId") != org.id || l.str("data.0.organizationName") != "Fleet" ||
		l.id("data.0.partnerId") != e.partnerID || l.str("data.0.resellerName") != "First partner" ||
		l.str("data.0.status") != "pending" || l.id("data.1.organizationId") != declined.id {
		t.Fatalf("partner B's invitations %s", l.raw)
	}
	if n := e.do("GET", "/v2/partners/organization-invitations", tokC, nil).want(http.StatusOK).num("metadata.count"); n != 0 {
		t.Fatalf("partner C has %v invitations", n)
	}
	// Only the invited partner can answer; anyone else learns nothing.
	for _, id := range []int64{org.id, ghost.id, 999} {
		e.do("POST", invitationPath(id, "/accept"), tokC, nil).wantError(http.StatusNotFound, nameNotFound, "invitation")
	}
	e.do("POST", invitationPath(org.id, "/accept"), e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound, "invitation")
	orgUser := e.orgUser(org.id, "ops@fleet.example", store.AccessEditor)
	e.do("POST", invitationPath(org.id, "/accept"), orgUser, nil).wantError(http.StatusForbidden, nameForbidden)

	a := e.do("POST", invitationPath(org.id, "/accept"), tokB, nil).want(http.StatusOK)
	if a.id("data.organizationId") != org.id || a.str("data.status") != "accepted" {
		t.Fatalf("accept %s", a.raw)
	}
	e.do("POST", invitationPath(org.id, "/accept"), tokB, nil).wantError(http.StatusNotFound, nameNotFound)
	e.newDevice(tokB, org.id, testIMEI(1), "B1")
	h := e.do("GET", orgPath(org.id, ""), e.partnerToken, nil).want(http.StatusOK)
	if ids := h.list("data.partnerIds"); len(ids) != 2 || h.id("data.partnerIds.1") != idB || h.get("data.invitedPartnerIds") != nil {
		t.Fatalf("the host's organization after B accepted: %s", h.raw)
	}
	// Pending invitations are the host's to see.
	e.do("PATCH", orgPath(org.id, ""), e.partnerToken, map[string]any{"partnerIds": []int64{idB, unknown}}).want(http.StatusOK)
	if g := e.do("GET", orgPath(org.id, ""), tokB, nil).want(http.StatusOK); g.get("data.invitedPartnerIds") != nil {
		t.Fatalf("the guest sees the host's invitations: %s", g.raw)
	}

	d := e.do("POST", invitationPath(declined.id, "/decline"), tokB, nil).want(http.StatusOK)
	if d.id("data.organizationId") != declined.id || d.str("data.status") != "declined" {
		t.Fatalf("decline %s", d.raw)
	}
	e.do("GET", orgPath(declined.id, ""), tokB, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("POST", invitationPath(declined.id, "/accept"), tokB, nil).wantError(http.StatusNotFound, nameNotFound)
	if g := e.do("GET", orgPath(declined.id, ""), e.partnerToken, nil).want(http.StatusOK); g.get("data.invitedPartnerIds") != nil {
		t.Fatalf("the declined invitation stays: %s", g.raw)
	}
	if n := e.do("GET", "/v2/partners/organization-invitations", tokB, nil).want(http.StatusOK).num("metadata.count"); n != 0 {
		t.Fatalf("partner B still has %v invitations", n)
	}

	// Each answer is in the host's audit log and in the guest's, where it
	// names no other partner.
	for action, want := range map[string]int{"organization.update": 4, "organization.invitation.accept": 2, "organization.invitation.decline": 2} {
		_, n, err := e.db.AuditLog(t.Context(), store.AuditFilter{Action: action}, store.Page{})
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("%d %s audit entries, want %d", n, action, want)
		}
	}
	for _, action := range []string{"organization.invitation.accept", "organization.invitation.decline"} {
		host := e.do("GET", "/v2/audit-logs?action="+action, e.partnerToken, nil).want(http.StatusOK)
		guest := e.do("GET", "/v2/audit-logs?action="+action, tokB, nil).want(http.StatusOK)
		if host.num("metadata.count") != 1 || !strings.Contains(host.str("data.0.value"), `"partnerIds"`) {
			t.Errorf("the host's %s entries: %s", action, host.raw)
		}
		if guest.num("metadata.count") != 1 || guest.get("data.0.partnerId") != itoa(idB) || strings.Contains(string(guest.raw), "artnerIds") {
			t.Errorf("the guest's %s entries: %s", action, guest.raw)
		}
	}
}

// TestAddDeviceOfAnotherPartner: adding an IMEI another partner holds, also
// in a shared organization, answers exactly as adding one's own registered
// IMEI: the answer does not say why, nor whose it is.
func TestAddDeviceOfAnotherPartner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, tokB, org := e.sharedOrg()
	hosts := e.newDevice(e.partnerToken, org.id, testIMEI(1), "A truck")
	elsewhere := e.newDevice(e.partnerToken, e.newOrg(e.partnerToken, "Private").id, testIMEI(2), "A van")
	own := e.newDevice(tokB, org.id, testIMEI(3), "B van")
	audits := e.auditCount()

	answer := func(imei string) string {
		t.Helper()
		r := e.do("POST", orgPath(org.id, "/devices"), tokB, map[string]any{"imei": imei, "name": "mine"})
		return strings.ReplaceAll(string(r.raw[:bytes.Index(r.raw, []byte(`"requestId"`))]), imei, "IMEI") + " " + itoa(int64(r.status))
	}
	want := answer(own)
	if !strings.Contains(want, `"error":"ConflictError","message":"device IMEI cannot be added to organization `+itoa(org.id)+`"`) {
		t.Fatalf("adding one's own registered IMEI: %s", want)
	}
	for _, imei := range []string{hosts, elsewhere} {
		if got := answer(imei); got != want {
			t.Errorf("adding %s, held by another partner:\n%s\nwant as for one's own IMEI:\n%s", imei, got, want)
		}
	}
	if n := e.auditCount(); n != audits {
		t.Fatalf("refused adds left %d audit entries", n-audits)
	}
}

// TestGuestPartnerReads: the host's configuration of a shared organization
// (webhook settings, subscriptions, endpoint state, users) answers a guest
// partner 403, and no read of the route table shows the guest the host's
// webhook URLs, webhook secret, ssoSecret or users. The guest's delivery
// log keeps its own devices' deliveries without the host's URL, its default
// settings leave out the webhooks, and its audit log shows the host's
// changes to its devices without who made them.
func TestGuestPartnerReads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	idB, tokB, org := e.sharedOrg()
	devA := e.newDevice(e.partnerToken, org.id, testIMEI(1), "A truck")
	devB := e.newDevice(tokB, org.id, testIMEI(2), "B van")
	const hostURL = "https://host.example.com/"
	secret := e.do("POST", orgPath(org.id, "/webhook-settings"), e.partnerToken,
		map[string]any{"alarmsWebhookUrl": []string{hostURL + "alarms"}}).want(http.StatusOK).str("data.webhookSecret")
	if secret == "" {
		t.Fatal("no webhook secret")
	}
	e.do("POST", orgPath(org.id, "/webhooks"), e.partnerToken, map[string]any{"imei": devA, "url": hostURL + "gps", "type": "gps"}).want(http.StatusOK)
	e.do("POST", orgPath(org.id, "/users"), e.partnerToken, map[string]any{"email": "ops@host.example", "password": "Passw0rdX"}).want(http.StatusOK)
	// Settings the host changes on every device, the guest's too.
	e.do("PATCH", orgPath(org.id, ""), e.partnerToken, map[string]any{"isOrganizationProfileEnabled": true}).want(http.StatusOK)
	e.do("PATCH", orgPath(org.id, "/event-settings"), e.partnerToken, events(ev("tailgating", "video"))).want(http.StatusOK)
	failed := "Post \"" + hostURL + "hook\": connection refused"
	err := e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		return tx.EnqueueDelivery(&store.Delivery{OrganizationID: org.id, URL: hostURL + "hook", WebhookID: "msg_1", Type: "event",
			IMEI: devB, MessageTime: e.clock.Now(), Body: json.RawMessage(`{"imei":"` + devB + `"}`), Attempts: 1,
			LastError: failed, Log: []store.DeliveryAttempt{{Time: e.clock.Now(), Error: failed}}})
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, p := range []string{"/webhook-settings", "/webhooks", "/webhook-endpoints", "/users"} {
		e.do("GET", orgPath(org.id, p), tokB, nil).wantError(http.StatusForbidden, nameForbidden,
			"only the partner that created organization "+itoa(org.id)+" can see these settings")
		if r := e.do("GET", orgPath(org.id, p), e.partnerToken, nil).want(http.StatusOK); !bytes.Contains(r.raw, []byte("host.example")) {
			t.Errorf("the host reads %s without its own configuration: %s", p, r.raw)
		}
	}
	deliveries := orgPath(org.id, "/webhook-deliveries")
	r := e.do("GET", deliveries, tokB, nil).want(http.StatusOK)
	if r.num("metadata.count") != 1 || r.str("data.0.imei") != devB || r.get("data.0.url") != nil || r.get("data.0.lastError") != nil {
		t.Fatalf("the guest's delivery log %s", r.raw)
	}
	e.do("GET", deliveries+"?url="+hostURL+"hook", tokB, nil).wantError(http.StatusForbidden, nameForbidden, "cannot filter by url")
	if h := e.do("GET", deliveries, e.partnerToken, nil).want(http.StatusOK); h.str("data.0.url") != hostURL+"hook" || h.str("data.0.lastError") != failed {
		t.Fatalf("the host's delivery log %s", h.raw)
	}

	// The defaults that apply to the guest's devices, without the host's webhooks.
	if d := e.do("GET", orgPath(org.id, "/default-settings"), tokB, nil).want(http.StatusOK); d.get("data.device") == nil || d.get("data.alarmsWebhookUrl") != nil {
		t.Fatalf("the guest's default settings %s", d.raw)
	}

	// The host's changes to the guest's devices, without who made them.
	if a := e.do("GET", "/v2/audit-logs?action=device.events", tokB, nil).want(http.StatusOK); a.num("metadata.count") != 1 ||
		a.str("data.0.entityId") != devB || a.get("data.0.userId") != nil || a.get("data.0.userEmail") != nil {
		t.Fatalf("the guest's audit log %s", a.raw)
	}
	if a := e.do("GET", "/v2/audit-logs?action=device.events", e.partnerToken, nil).want(http.StatusOK); a.str("data.0.userEmail") != "partner@example.com" {
		t.Fatalf("the host's audit log %s", a.raw)
	}

	// Nothing the guest reads tells the host's secrets or configuration.
	params := strings.NewReplacer(":orgId", itoa(org.id), ":imei", devB, ":partnerId", itoa(idB))
	for _, rt := range e.api.engine.Routes() {
		if rt.Method != http.MethodGet {
			continue
		}
		raw := e.do("GET", params.Replace(rt.Path), tokB, nil).raw
		for _, leak := range []string{"host.example", secret, org.secret, "partner@example.com"} {
			if bytes.Contains(raw, []byte(leak)) {
				t.Errorf("GET %s shows the guest %q: %s", rt.Path, leak, raw)
			}
		}
	}
}
