package cloudapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// guestRule is what a guest partner of a shared organization may do with a
// write route.
type guestRule int

const (
	// hostWrite changes the organization's settings or records (drivers,
	// alarm recipients, webhooks...): a guest gets 403, the host makes it.
	hostWrite guestRule = iota + 1
	// guestWrite acts on what the guest holds: its own devices (device
	// tenancy admits no other), or its own answer to an invitation.
	guestWrite
	// noOrgWrite names no organization: sessions, partner-level records,
	// signed media URLs.
	noOrgWrite
)

// writeDecision is the recorded decision for one write route.
type writeDecision struct {
	rule guestRule
	// path replaces the route's path in the calls: to add a query, or a
	// placeholder of its own.
	path string
	// body is sent with the calls; a string body is sent raw, with its
	// placeholders replaced.
	body any
	// host is the status the host's call gets (200 unless set).
	host int
}

var (
	ownDevices = writeDecision{rule: guestWrite}
	noOrg      = writeDecision{rule: noOrgWrite}
)

// guestWrites holds a decision for every write route of the route table
// (every method but GET, and every GET a viewer is refused as a write);
// TestGuestPartnerWrites fails on a write route without one. A guest
// manages its own devices in a shared organization; the organization's
// settings and records are the host's, whether a call names the
// organization in its path, its query or its body.
var guestWrites = map[string]writeDecision{
	"PATCH /v2/organizations/:orgId":                                         {rule: hostWrite, body: map[string]any{"name": "Renamed"}},
	"POST /v2/organizations/:orgId/users":                                    {rule: hostWrite, body: map[string]any{"email": "ops@shared.example", "password": "Passw0rdX"}},
	"POST /v2/organizations/:orgId/groups":                                   {rule: hostWrite, body: map[string]any{"name": "Night shift"}},
	"POST /v2/organizations/:orgId/device-settings":                          {rule: hostWrite, body: map[string]any{"brightness": map[string]any{"value": 40}}},
	"POST /v2/organizations/:orgId/event-settings":                           {rule: hostWrite, body: events(ev("tailgating", "video"))},
	"PATCH /v2/organizations/:orgId/event-settings":                          {rule: hostWrite, body: events(ev("tailgating", "video"))},
	"PATCH /v2/organizations/:orgId/privacy-config":                          {rule: hostWrite, body: map[string]any{"gpsTracking": "disabled"}},
	"POST /v2/organizations/:orgId/webhook-settings":                         {rule: hostWrite, body: map[string]any{"alarmsWebhookUrl": []string{"https://guest.example.com/alarms"}}},
	"PATCH /v2/organizations/:orgId/webhook-settings":                        {rule: hostWrite, body: map[string]any{"alarmsWebhookUrl": []string{"https://guest.example.com/alarms"}}},
	"POST /v2/organizations/:orgId/webhook-secret/rotate":                    {rule: hostWrite},
	"POST /v2/organizations/:orgId/webhooks":                                 {rule: hostWrite, body: map[string]any{"imei": testIMEI(1), "url": "https://guest.example.com/gps", "type": "gps"}},
	"PUT /v2/organizations/:orgId/webhooks":                                  {rule: hostWrite, body: []any{}},
	"DELETE /v2/organizations/:orgId/webhooks/:webhookId":                    {rule: hostWrite, host: http.StatusNotFound},
	"POST /v2/organizations/:orgId/webhook-deliveries/:deliveryId/redeliver": {rule: hostWrite, host: http.StatusNotFound},
	"PUT /v2/organizations/:orgId/data-profile":                              {rule: hostWrite, body: map[string]any{"defaultDataProfileId": 7}},
	// An organization's OAuth client acts as its administrator.
	"POST /v2/oauth/clients/:entityType/:entityId": {rule: hostWrite, path: "/v2/oauth/clients/organization/:orgId",
		body: map[string]any{}, host: http.StatusCreated},
	"POST /v2/organizations/:orgId/default-settings/pin-codes": {rule: hostWrite, body: map[string]any{"password": "Secret123"}},
	// The shared organization holds devices: the host is refused too.
	"DELETE /v2/organizations/:orgId":                          {rule: hostWrite, host: http.StatusConflict},
	"POST /v2/organizations/:orgId/external-users":             {rule: hostWrite, body: map[string]any{"email": "nobody@host.example"}, host: http.StatusNotFound},
	"DELETE /v2/organizations/:orgId/external-users":           {rule: hostWrite, body: map[string]any{"email": "nobody@host.example"}, host: http.StatusNotFound},
	"PUT /v2/organizations/:orgId/groups":                      {rule: hostWrite, body: `{"groupId": :groupId, "name": "Day crew"}`},
	"PATCH /v2/users/:userId/organizations/:orgId/permissions": {rule: hostWrite, path: "/v2/users/999/organizations/:orgId/permissions", body: map[string]any{"role": "user", "organizationAccessEdgeGroupIds": []int{-2}}, host: http.StatusNotFound},
	"DELETE /v2/organizations/:orgId/groups":                   {rule: hostWrite, body: map[string]any{"groupId": 999}, host: http.StatusNotFound},
	"POST /v2/organization-album/:orgId/album/config":          {rule: hostWrite, body: map[string]any{"albumStatus": "enabled"}},
	// The album holds no image of the host's here.
	"POST /v2/organization-album/:orgId/album/status": {rule: hostWrite, host: http.StatusNotFound,
		body: map[string]any{"imageId": testIMEI(1) + ".f1", "status": "familiar"}},

	// The organization named in the query or the body.
	"POST /v2/drivers": {rule: hostWrite, path: "/v2/drivers?organizationId=:orgId", host: http.StatusCreated,
		body: `{"data": [{"organizationId": :orgId, "driverThirdPartyId": "D-2"}]}`},
	"PUT /v2/drivers": {rule: hostWrite, path: "/v2/drivers?organizationId=:orgId",
		body: `{"data": [{"organizationId": :orgId, "id": :driverId, "isActive": true}]}`},
	"PATCH /v2/drivers": {rule: hostWrite, path: "/v2/drivers?organizationId=:orgId", host: http.StatusNoContent,
		body: `{"data": [{"organizationId": :orgId, "id": :driverId, "firstName": "Ann"}]}`},
	"DELETE /v2/drivers": {rule: hostWrite, path: "/v2/drivers?organizationId=:orgId", host: http.StatusNoContent,
		body: `{"data": [{"organizationId": :orgId, "id": :inactiveDriverId}]}`},
	// On the guest's own device too: the driver is the host's.
	"POST /v2/drivers/devices": {rule: hostWrite, host: http.StatusCreated,
		body: `{"data": [{"organizationId": :orgId, "driverThirdPartyId": "D-1", "imei": ":imei"}]}`},
	"DELETE /v2/drivers/devices": {rule: hostWrite, host: http.StatusNoContent,
		body: `{"data": [{"organizationId": :orgId, "driverThirdPartyId": "D-1", "imei": ":imei"}]}`},
	// An organization's recipients receive every alarm of its devices, the
	// host's too. A partner-wide recipient (no organizationId) receives the
	// partner's own devices' alarms: a guest still adds one.
	"POST /v2/recipients/alarms": {rule: hostWrite, path: "/v2/recipients/alarms?organizationId=:orgId",
		body: map[string]any{"email": "ops@guest.example"}},
	"PATCH /v2/recipients/alarms/:recipientId":  {rule: hostWrite, body: map[string]any{"reportIntervalSeconds": 600}},
	"DELETE /v2/recipients/alarms/:recipientId": {rule: hostWrite},
	"POST /v2/recipients/health": {rule: hostWrite, path: "/v2/recipients/health?organizationId=:orgId",
		body: map[string]any{"email": "ops@guest.example", "reportIntervalSeconds": 3600}},
	"DELETE /v2/recipients/health/:recipientId": {rule: hostWrite, path: "/v2/recipients/health/:healthRecipientId"},

	"POST /v2/organizations/:orgId/devices":                            {rule: guestWrite, body: map[string]any{"imei": testIMEI(5), "name": "B2"}},
	"DELETE /v2/organizations/:orgId/devices/:imei":                    {rule: guestWrite},
	"POST /v2/organizations/:orgId/groups/:groupId/devices":            {rule: guestWrite, body: []string{testIMEI(2)}},
	"PUT /v2/organizations/:orgId/devices/data-profile/:dataProfileId": {rule: guestWrite},
	"POST /v2/organizations/:orgId/events":                             {rule: guestWrite, body: map[string]any{"start": "2026-03-01T00:00:00.000Z", "end": "2026-03-01T12:00:00.000Z"}},
	"POST /v2/organizations/:orgId/devices/calibrate-accelerometer":    {rule: guestWrite, body: map[string]any{"ungrouped": true}},
	"POST /v2/organizations/:orgId/bulk-devices":                       {rule: guestWrite, body: []map[string]any{{"imei": testIMEI(6), "name": "B3"}}},
	"PUT /v2/organizations/:orgId/partner-bulk-devices":                {rule: guestWrite, body: []map[string]any{{"imei": testIMEI(7), "name": "B4"}}},

	// The guest's own answer; its scoped tokens reach its own devices only.
	"POST /v2/partners/organization-invitations/:orgId/accept":  ownDevices,
	"POST /v2/partners/organization-invitations/:orgId/decline": ownDevices,
	"POST /v2/scoped-token": ownDevices,

	// Device calls: the devices named by IMEI, or the caller's devices of
	// the organizationId named (bulk and billing calls). Geofences and
	// driver check-out are per device.
	"PATCH /v2/devices/:imei":                                 ownDevices,
	"PUT /v2/devices/:imei/device-config":                     ownDevices,
	"PUT /v2/devices/device-config":                           ownDevices,
	"PUT /v2/devices/:imei/event-config":                      ownDevices,
	"PUT /v2/devices/event-config":                            ownDevices,
	"POST /v2/devices/privacy-control":                        ownDevices,
	"PATCH /v2/devices/bulk/privacy-config":                   ownDevices,
	"PUT /v2/devices/:imei/hotspot":                           ownDevices,
	"POST /v2/devices/wifi-password":                          ownDevices,
	"GET /v2/devices/:imei/format-storage":                    ownDevices,
	"DELETE /v2/devices/:imei/events/:eventId":                ownDevices,
	"PATCH /v2/devices/event-review-state":                    ownDevices,
	"POST /v2/devices/:imei/virtual-event":                    ownDevices,
	"PUT /v2/devices/:imei/geofences":                         ownDevices,
	"POST /v2/devices/:imei/connect-media":                    ownDevices,
	"DELETE /v2/devices/:imei/adas-delete-calibration-images": ownDevices,
	"GET /v2/devices/:imei/adas-delete-calibration-images":    ownDevices,
	"POST /v2/devices/:imei/driver-checkout":                  ownDevices,
	"POST /v2/alarms/:alarmId/actions":                        ownDevices,
	"POST /v2/alarms/:alarmId/comments":                       ownDevices,
	"POST /v2/devices/:imei/alarm-simulator":                  ownDevices,
	"GET /v2/devices/:imei/auxiliary-cameras/search":          ownDevices,
	"POST /v2/devices/:imei/auxiliary-cameras/pair":           ownDevices,
	"POST /v2/devices/:imei/auxiliary-cameras/unpair":         ownDevices,
	"POST /v2/auxiliary-cameras/billing-status":               ownDevices,
	"POST /v2/devices/auxiliary-cameras/billing-status":       ownDevices,
	"POST /v2/auxiliary-cameras/billing":                      ownDevices,
	"POST /v2/devices/auxiliary-cameras/billing":              ownDevices,
	"PUT /v2/devices/:imei/billing-status/:billingStatus":     ownDevices,
	"PUT /v2/devices/billing-status/:billingStatus":           ownDevices,
	"PUT /v2/devices/:imei/data-profile/:dataProfileId":       ownDevices,
	"PUT /v2/devices/data-profile/:dataProfileId":             ownDevices,
	"POST /v2/authenticate":                                   noOrg,
	"POST /v2/reset-password/:token":                          noOrg,
	"POST /v2/organizations":                                  noOrg,
	"POST /v2/partners/:partnerId/contacts":                   noOrg,
	"PUT /v2/media/upload/:imei/:fileType/:cameraId/:fileId":  noOrg,
	"POST /v2/media/live/:imei/:stream/frames":                noOrg,
	// OAuth clients are named by their own id, which is the host's or the
	// guest partner's alone; the token endpoints authenticate a client.
	"PATCH /v2/oauth/clients/:clientId":      noOrg,
	"DELETE /v2/oauth/clients/:clientId":     noOrg,
	"PUT /v2/oauth/clients/:clientId/secret": noOrg,
	"POST /v2/oauth/token":                   noOrg,
	"POST /v2/oauth/introspect":              noOrg,
	// Device control and calibration; an organization's auto-calibration
	// default is the host's (checked in the handler, the organization being
	// named in the body).
	"POST /v2/devices/:imei/reboot":                    ownDevices,
	"POST /v2/devices/:imei/factory-reset":             ownDevices,
	"POST /v2/devices/:imei/wakeup":                    ownDevices,
	"PUT /v2/devices/:imei/demo-mode":                  ownDevices,
	"DELETE /v2/devices/:imei/demo-mode":               ownDevices,
	"PUT /v2/devices/:imei/semi-online":                ownDevices,
	"POST /v2/devices/:imei/otg-settings":              ownDevices,
	"POST /v2/devices/tailgating-event-mute/configure": ownDevices,
	"PATCH /v2/devices/:imei/cameras":                  ownDevices,
	"POST /v2/devices/:imei/pin-codes":                 ownDevices,
	"PUT /v2/devices/:imei/calibrate-adas":             ownDevices,
	"POST /v2/devices/:imei/calibrate-adas":            ownDevices,
	"POST /v2/devices/auto-calibration/config":         ownDevices,
	"POST /v2/devices/auto-recalibrate":                ownDevices,
	// Users: a guest partner manages no user of an organization it did
	// not create (404, TestDeleteUser); its own contacts and itself.
	"DELETE /v2/users/:userId":                                  noOrg,
	"POST /v2/users/:userId/change-password":                    noOrg,
	"PUT /v2/users/update-settings":                             noOrg,
	"POST /v2/forget-password/:email":                           noOrg,
	"PATCH /v2/partners/:partnerId/contacts/:partnerContactId":  noOrg,
	"DELETE /v2/partners/:partnerId/contacts/:partnerContactId": noOrg,
	"PUT /v2/devices/:imei/retention-config":                    ownDevices,
	// Reads by POST: the devices named, or the guest's own devices of the organization.
	"POST /v2/devices/bulk-data-usage":                            ownDevices,
	"POST /v2/associated-devices":                                 ownDevices,
	"POST /v2/organizations/:orgId/get-recording-encryption-keys": ownDevices,
	"PUT /v2/generate-encryption-key":                             noOrg,

	// Notification recipients are device settings; the bulk call given an
	// organization changes the caller's devices there only.
	"DELETE /v2/devices/:imei/notification-recipients/:email":         ownDevices,
	"PUT /v2/devices/:imei/events/:eventType/notification-recipients": ownDevices,
	"PUT /v2/devices/events/:eventType/notification-recipients":       ownDevices,
}

// TestGuestPartnerWrites: every write route of the route table has a
// recorded decision for a guest partner of a shared organization. The
// guest is refused every write of the organization's settings and records
// (403, nothing changes, nothing audited), whether the organization is in
// the path, the query or the body, while the host makes them; the guest
// still manages its own devices.
func TestGuestPartnerWrites(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	idB, tokB, org := e.sharedOrg()
	devA := e.newDevice(e.partnerToken, org.id, testIMEI(1), "A truck")
	devB := e.newDevice(tokB, org.id, testIMEI(2), "B van")
	group := e.newGroup(e.partnerToken, org.id, "Day shift")
	e.do("POST", orgPath(org.id, "/webhook-settings"), e.partnerToken,
		map[string]any{"alarmsWebhookUrl": []string{"https://host.example.com/alarms"}}).want(http.StatusOK)
	drivers := "/v2/drivers?organizationId=" + itoa(org.id)
	e.do("POST", drivers, e.partnerToken, map[string]any{"data": []map[string]any{
		{"organizationId": org.id, "driverThirdPartyId": "D-1"}, {"organizationId": org.id, "driverThirdPartyId": "D-0"}}}).want(http.StatusCreated)
	list := e.do("GET", drivers+"&sort=createdAt&order=asc", e.partnerToken, nil).want(http.StatusOK)
	driver, inactive := list.str("data.0.id"), list.str("data.1.id")
	e.do("PUT", drivers, e.partnerToken, map[string]any{"data": []map[string]any{
		{"organizationId": org.id, "id": inactive, "isActive": false}}}).want(http.StatusOK)
	recipient := func(kind, token, email string) string {
		return itoa(e.do("POST", "/v2/recipients/"+kind+"?organizationId="+itoa(org.id), token,
			map[string]any{"email": email, "reportIntervalSeconds": 3600}).want(http.StatusOK).id("data.id"))
	}
	hostAlarms, hostHealth := recipient("alarms", e.partnerToken, "host@host.example"), recipient("health", e.partnerToken, "host@host.example")
	// Recipients the guest added for the organization before guests were refused.
	guestAlarms, guestHealth := e.addRecipient(store.RecipientAlarms, idB, org.id), e.addRecipient(store.RecipientHealth, idB, org.id)

	common := []string{":orgId", itoa(org.id), ":groupId", itoa(group), ":webhookId", "999", ":deliveryId", "999",
		":dataProfileId", "3", ":driverId", driver, ":inactiveDriverId", inactive}
	hostParams := strings.NewReplacer(append(common, ":imei", devA, ":recipientId", hostAlarms, ":healthRecipientId", hostHealth)...)
	guestParams := strings.NewReplacer(append(common, ":imei", devB, ":recipientId", guestAlarms, ":healthRecipientId", guestHealth)...)

	var hostOnly, guestAllowed []string
	for _, key := range e.writeRoutes(guestParams) {
		d, has := guestWrites[key]
		switch {
		case !has:
			t.Errorf("%s: no decision whether a guest partner may make this write; add it to guestWrites", key)
		case d.rule == hostWrite:
			hostOnly = append(hostOnly, key)
		case d.rule == guestWrite && strings.Contains(key, " /v2/organizations/:orgId"):
			// The device calls act on devices the caller holds, which
			// the device tenancy tests cover.
			guestAllowed = append(guestAllowed, key)
		}
	}
	call := func(key, token string, params *strings.Replacer) *response {
		method, path, _ := strings.Cut(key, " ")
		d := guestWrites[key]
		if d.path != "" {
			path = d.path
		}
		body := d.body
		if s, isString := body.(string); isString {
			body = params.Replace(s)
		}
		return e.do(method, params.Replace(path), token, body)
	}

	before, audits := e.orgState(org.id, tokB), e.auditCount()
	for _, key := range hostOnly {
		call(key, tokB, guestParams).wantError(http.StatusForbidden, nameForbidden, "only the partner that created organization "+itoa(org.id)+" can change its settings")
	}
	if after := e.orgState(org.id, tokB); after != before {
		t.Fatalf("refused guest writes changed the organization:\nbefore %s\nafter  %s", before, after)
	}
	if n := e.auditCount(); n != audits {
		t.Fatalf("refused guest writes left %d audit entries", n-audits)
	}
	// Creations first, removals last.
	rank := func(key string) int {
		return slices.Index([]string{"POST", "PUT", "PATCH", "DELETE"}, key[:strings.Index(key, " ")])
	}
	slices.SortFunc(hostOnly, func(a, b string) int { return rank(a) - rank(b) })
	for _, key := range hostOnly {
		want := guestWrites[key].host
		if want == 0 {
			want = http.StatusOK
		}
		if r := call(key, e.partnerToken, hostParams); r.status != want {
			t.Errorf("%s: the host got %d %s, want %d", key, r.status, r.raw, want)
		}
	}
	// A partner-wide recipient receives the alarms of the guest's own devices.
	e.do("POST", "/v2/recipients/alarms", tokB, map[string]any{"email": "ops@guest.example"}).want(http.StatusOK)
	slices.SortStableFunc(guestAllowed, func(a, b string) int { return rank(a) - rank(b) })
	for _, key := range guestAllowed {
		if r := call(key, tokB, guestParams); r.status >= 300 {
			t.Errorf("%s: the guest partner got %d %s", key, r.status, r.raw)
		}
	}
}

// writeRoutes lists the write routes of the route table as "METHOD path":
// every route whose method is not GET, and every GET route a viewer is
// refused as a write (params fills the path parameters). It fails the test
// on a decision in guestWrites for a route that is not a write.
func (e *testEnv) writeRoutes(params *strings.Replacer) []string {
	e.t.Helper()
	viewer := e.partnerUser("viewer@example.com", store.AccessViewer)
	var out []string
	for _, r := range e.api.engine.Routes() {
		key := r.Method + " " + r.Path
		if r.Method == http.MethodGet {
			refused := e.do("GET", params.Replace(r.Path), viewer, nil)
			if refused.status != http.StatusForbidden || !strings.Contains(string(refused.raw), "cannot create, update or delete") {
				continue
			}
		}
		out = append(out, key)
	}
	for key := range guestWrites {
		if !slices.Contains(out, key) {
			e.t.Errorf("guestWrites names %s, which is not a write route", key)
		}
	}
	return out
}

// partnerUser adds a user of the first partner with the access level and
// returns its token.
func (e *testEnv) partnerUser(email, level string) string {
	e.t.Helper()
	hash := testHash("Secret123")
	err := e.db.Update(e.t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		return tx.CreateUser(&store.User{Email: email, PasswordHash: hash, PartnerID: e.partnerID, AccessLevel: level})
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return e.login(email, "Secret123")
}

// addRecipient stores an alarm recipient of partner for organization
// orgID directly, and returns its id.
func (e *testEnv) addRecipient(kind string, partnerID, orgID int64) string {
	e.t.Helper()
	r := &store.AlarmRecipient{Kind: kind, Email: "legacy@guest.example", ReportIntervalSeconds: 3600, PartnerID: partnerID, OrganizationID: orgID}
	if err := e.db.Update(e.t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error { return tx.AddAlarmRecipient(r) }); err != nil {
		e.t.Fatal(err)
	}
	return itoa(r.ID)
}

// orgState is what the host reads of an organization's settings and
// records, and what the guest reads of its recipients, to tell whether a
// refused call changed any of it.
func (e *testEnv) orgState(orgID int64, guestToken string) string {
	e.t.Helper()
	var b strings.Builder
	read := func(path, token string) {
		data, _ := json.Marshal(e.do("GET", path, token, nil).want(http.StatusOK).get("data"))
		b.WriteString(path + " " + string(data) + "\n")
	}
	for _, p := range []string{"", "/users", "/groups", "/device-settings", "/event-settings", "/privacy-config",
		"/webhook-settings", "/webhooks", "/webhook-endpoints", "/data-profile"} {
		read(orgPath(orgID, p), e.partnerToken)
	}
	for _, p := range []string{"/v2/drivers", "/v2/recipients/alarms", "/v2/recipients/health"} {
		read(p+"?organizationId="+itoa(orgID), e.partnerToken)
	}
	read("/v2/recipients/alarms", guestToken)
	read("/v2/recipients/health", guestToken)
	return b.String()
}

// auditCount is the number of entries in the audit log.
func (e *testEnv) auditCount() int {
	e.t.Helper()
	_, n, err := e.db.AuditLog(e.t.Context(), store.AuditFilter{}, store.Page{Limit: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}
