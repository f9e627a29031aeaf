package cloudapi

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

func TestAlarmSimulatorAndDetails(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	dev := e.devices[0]
	path := "/v2/devices/" + dev + "/alarm-simulator"
	body := map[string]any{"alarmDefinitionId": 1002, "createdAt": "2026-02-28T10:00:00.000Z", "metadata": "testing the SD card alarm"}
	tests := []struct {
		name   string
		token  string
		path   string
		body   any
		status int
		error  string
		msg    []string
	}{
		{"viewer", e.viewerToken, path, body, 403, nameForbidden, nil},
		{"another partner's device", e.rivalToken, path, body, 404, nameNotFound, []string{dev}},
		{"another organization's device", e.org2Token, path, body, 404, nameNotFound, nil},
		{"missing definition", e.adminToken, path, map[string]any{"createdAt": "2026-02-28T10:00:00Z"}, 400, nameBadRequest, []string{"alarmDefinitionId", "required"}},
		{"unknown definition", e.adminToken, path, map[string]any{"alarmDefinitionId": 7, "createdAt": "2026-02-28T10:00:00Z"}, 400, nameBadRequest, []string{"alarmDefinitionId", "1001"}},
		{"missing createdAt", e.adminToken, path, map[string]any{"alarmDefinitionId": 1002}, 400, nameBadRequest, []string{"createdAt", "required"}},
		{"bad createdAt", e.adminToken, path, map[string]any{"alarmDefinitionId": 1002, "createdAt": "28/02/2026"}, 400, nameBadRequest, []string{"createdAt", "ISO 8601"}},
		{"createdAt in the future", e.adminToken, path, map[string]any{"alarmDefinitionId": 1002, "createdAt": "2099-02-28T10:00:00Z"}, 400, nameBadRequest, []string{"createdAt", "future"}},
		{"metadata not a string", e.adminToken, path, map[string]any{"alarmDefinitionId": 1002, "createdAt": "2026-02-28T10:00:00Z", "metadata": 5}, 400, nameBadRequest, []string{"metadata"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.do("POST", tt.path, tt.token, tt.body).wantError(tt.status, tt.error, tt.msg...)
		})
	}
	r := e.do("POST", path, e.partnerToken, body).want(http.StatusOK)
	id := r.id("data.alarmId")
	// No URL of the organization receives alarm webhooks yet: none is sent.
	if id == 0 || r.get("data.isWebhookSent") != false {
		t.Fatalf("simulator answer %s", r.raw)
	}
	msgs := allMessages(t, e.db)
	var alarmMsgs []store.Message
	for _, m := range msgs {
		if m.Kind == store.MessageAlarm {
			alarmMsgs = append(alarmMsgs, m)
		}
	}
	if len(alarmMsgs) != 1 || alarmMsgs[0].IMEI != dev || alarmMsgs[0].OrganizationID != e.org.ID {
		t.Fatalf("alarm messages %+v", alarmMsgs)
	}
	if notice := alarmMsgs[0].Alarm; notice == nil || notice.Alarm.ID != id || !notice.Alarm.Simulated || len(notice.Alarm.Comments) != 1 {
		t.Fatalf("alarm message fact %+v", notice)
	}

	r = e.do("GET", fmt.Sprintf("/v2/alarms/%d", id), e.viewerToken, nil).want(http.StatusOK)
	want := map[string]any{
		"data.id": float64(id), "data.imei": dev, "data.organizationId": float64(e.org.ID), "data.organizationName": "Fleet one",
		"data.partnerId": float64(e.partnerID), "data.partnerName": "First partner", "data.alarmDefinitionId": float64(1002),
		"data.createdAt": "2026-02-28T10:00:00.000Z", "data.lastReadAt": nil, "data.lastCloseAt": nil, "data.isOpen": true,
		"data.isSimulated": true, "data.comments.0.details": "testing the SD card alarm", "data.comments.0.alarmId": float64(id),
		"data.comments.0.createdByAudienceName": "partner", "data.comments.0.commentorName": "partner@example.com",
		"data.actions.0.type": "open", "data.actions.0.alarmId": float64(id),
	}
	for k, v := range want {
		if got := r.get(k); got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	if r.get("data.userId") == nil || r.str("data.details") == "" {
		t.Errorf("userId and details must be set: %s", r.raw)
	}
	for _, key := range []string{"comments.0.id", "comments.0.createdById", "comments.0.createdAt", "actions.0.id",
		"actions.0.createdByAudienceName", "actions.0.createdById", "actions.0.createdAt"} {
		if r.get("data."+key) == nil {
			t.Errorf("data.%s missing: %s", key, r.raw)
		}
	}

	// Close it; the triple stays taken.
	e.do("POST", fmt.Sprintf("/v2/alarms/%d/actions", id), e.adminToken, map[string]any{"type": "close"}).want(http.StatusOK)
	e.do("POST", path, e.adminToken, body).wantError(409, nameConflict, dev, "1002", "2026-02-28T10:00:00.000Z")
	body["createdAt"] = "2026-02-28T10:00:01Z"
	e.do("POST", orgPath(e.org.ID, "/webhook-settings"), e.adminToken,
		map[string]any{"alarmsWebhookUrl": []string{"https://alarms.example.com/in"}}).want(http.StatusOK)
	if r := e.do("POST", path, e.adminToken, body).want(http.StatusOK); r.get("data.isWebhookSent") != true {
		t.Fatalf("simulator answer with an alarm webhook URL: %s", r.raw)
	}

	e.do("GET", fmt.Sprintf("/v2/alarms/%d", id), e.rivalToken, nil).wantError(404, nameNotFound)
	e.do("GET", fmt.Sprintf("/v2/alarms/%d", id), e.org2Token, nil).wantError(404, nameNotFound)
	e.do("GET", "/v2/alarms/99999", e.adminToken, nil).wantError(404, nameNotFound)
}

func TestAlarmReportActionsAndComments(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	// Real alarms from health reports on two devices of org one and one of org two.
	for i, st := range []store.DeviceHealth{
		{RecordingTest: "failed", PowerConnected: boolPtr(false)},
		{SDCard: &store.SDCardHealth{Present: true, Healthy: false}},
		{},
		{RecordingTest: "failed"},
	} {
		e.fleetUpdate(func(tx *store.Tx) error {
			dev, _ := tx.Device(e.devices[i])
			_, err := tx.ApplyHealthAlarms(dev, st)
			return err
		})
	}
	e.fleetUpdate(func(tx *store.Tx) error {
		dev, _ := tx.Device(e.rivalDevices[0])
		_, err := tx.ApplyHealthAlarms(dev, store.DeviceHealth{RecordingTest: "failed"})
		return err
	})
	count := func(token, path string) float64 {
		t.Helper()
		return e.do("GET", path, token, nil).want(http.StatusOK).num("metadata.count")
	}
	tests := []struct {
		name  string
		token string
		path  string
		want  float64
	}{
		{"organization one", e.viewerToken, "/v2/alarms", 3},
		{"partner, all organizations", e.partnerToken, "/v2/alarms", 4},
		{"partner, organization two", e.partnerToken, q("/v2/alarms", e.org2.ID), 1},
		{"rival partner", e.rivalToken, "/v2/alarms", 1},
		{"by device", e.adminToken, "/v2/alarms?imei=" + e.devices[0], 2},
		{"by definition", e.adminToken, "/v2/alarms?alarmDefinitionId=1005", 1},
		{"by definition name", e.adminToken, "/v2/alarms?alarmDefinitionName=sd+card", 1},
		{"by severity", e.adminToken, "/v2/alarms?alarmDefinitionSeverity=60", 1},
		{"by device name", e.adminToken, "/v2/alarms?name=truck+2", 1},
		{"open", e.adminToken, "/v2/alarms?open", 3},
		{"closed", e.adminToken, "/v2/alarms?close", 0},
		{"before they happened", e.adminToken, "/v2/alarms?end=2026-01-01T00:00:00Z", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := count(tt.token, tt.path); got != tt.want {
				t.Fatalf("count %v, want %v", got, tt.want)
			}
		})
	}
	e.do("GET", "/v2/alarms?open&close", e.adminToken, nil).wantError(400, nameBadRequest, "open")
	e.do("GET", "/v2/alarms?alarmDefinitionSeverity=15", e.adminToken, nil).wantError(400, nameBadRequest, "alarmDefinitionSeverity")
	e.do("GET", q("/v2/alarms", e.org.ID), e.rivalToken, nil).wantError(404, nameNotFound)

	r := e.do("GET", "/v2/alarms?sort=alarmDefinitionSeverity&order=asc&limit=2", e.adminToken, nil).want(http.StatusOK)
	if r.num("data.0.alarmDefinitionSeverity") != 40 || r.num("metadata.count") != 3 || len(r.list("data")) != 2 {
		t.Fatalf("sorted page %s", r.raw)
	}
	id := e.do("GET", "/v2/alarms?alarmDefinitionId=1001", e.adminToken, nil).id("data.0.id")
	act := func(token, typ string) *response {
		return e.do("POST", fmt.Sprintf("/v2/alarms/%d/actions", id), token, map[string]any{"type": typ})
	}
	act(e.viewerToken, "read").wantError(403, nameForbidden)
	act(e.adminToken, "dance").wantError(400, nameBadRequest, "type")
	act(e.rivalToken, "read").wantError(404, nameNotFound)
	// The organization, its list entry and the partner's /me count unread alarms.
	unread := func() (org, listed, me float64) {
		org = e.do("GET", fmt.Sprintf("/v2/organizations/%d", e.org.ID), e.partnerToken, nil).want(http.StatusOK).num("data.alarmsCount")
		for _, o := range e.do("GET", "/v2/organizations", e.partnerToken, nil).want(http.StatusOK).list("data") {
			if o.(map[string]any)["id"] == float64(e.org.ID) {
				listed = o.(map[string]any)["alarmsCount"].(float64)
			}
		}
		return org, listed, e.do("GET", "/v2/me", e.partnerToken, nil).want(http.StatusOK).num("data.me.alarmsCount")
	}
	org0, listed0, me0 := unread()
	if org0 == 0 || listed0 != org0 || me0 < org0 {
		t.Fatalf("unread alarms before: organization %v, listed %v, partner %v", org0, listed0, me0)
	}
	r = act(e.adminToken, "read").want(http.StatusOK)
	if r.str("data.type") != "read" || r.str("data.createdByAudienceName") != "organization" || r.id("data.alarmId") != id {
		t.Fatalf("action %s", r.raw)
	}
	if org1, listed1, me1 := unread(); org1 != org0-1 || listed1 != org0-1 || me1 != me0-1 {
		t.Fatalf("unread alarms after a read: organization %v, listed %v, partner %v (before %v, %v, %v)", org1, listed1, me1, org0, listed0, me0)
	}
	act(e.partnerToken, "close").want(http.StatusOK)
	e.do("POST", fmt.Sprintf("/v2/alarms/%d/comments", id), e.adminToken, map[string]any{"details": ""}).wantError(400, nameBadRequest, "details")
	r = e.do("POST", fmt.Sprintf("/v2/alarms/%d/comments", id), e.adminToken, map[string]any{"details": "card replaced"}).want(http.StatusOK)
	if r.str("data.details") != "card replaced" || r.str("data.commentorName") != "admin@one.example" {
		t.Fatalf("comment %s", r.raw)
	}
	r = e.do("GET", fmt.Sprintf("/v2/alarms/%d", id), e.adminToken, nil).want(http.StatusOK)
	if r.get("data.isOpen") != false || r.get("data.isRead") != true || r.str("data.lastReadAt") == "" || r.str("data.lastCloseAt") == "" ||
		len(r.list("data.actions")) != 3 || len(r.list("data.comments")) != 1 || r.get("data.userId") != nil {
		t.Fatalf("alarm after actions %s", r.raw)
	}
	if got := count(e.adminToken, "/v2/alarms?close&read"); got != 1 {
		t.Fatalf("closed and read: %v", got)
	}
	defs := e.do("GET", "/v2/alarm-definitions", e.viewerToken, nil).want(http.StatusOK)
	if len(defs.list("data")) != 6 || defs.str("data.0.recommendation") == "" {
		t.Fatalf("definitions %s", defs.raw)
	}
}

func boolPtr(b bool) *bool { return &b }

func TestAlarmRecipients(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	r := e.do("POST", "/v2/recipients/alarms", e.adminToken, map[string]any{"email": "ops@one.example",
		"alarmDefinitions": []map[string]any{{"id": 1001}}}).want(http.StatusOK)
	id := r.id("data.id")
	if r.str("data.targetEntity") != "organization" || r.id("data.targetId") != e.org.ID || r.str("data.alarmDefinitions.0.name") == "" {
		t.Fatalf("recipient %s", r.raw)
	}
	e.do("POST", "/v2/recipients/alarms", e.adminToken, map[string]any{"email": "ops@one.example"}).wantError(409, nameConflict, "ops@one.example")
	e.do("POST", "/v2/recipients/alarms", e.adminToken, map[string]any{"email": "not an address"}).wantError(400, nameBadRequest, "email")
	e.do("POST", "/v2/recipients/alarms", e.adminToken, map[string]any{"email": "a@b.example", "alarmDefinitions": []map[string]any{{"id": 5}}}).
		wantError(400, nameBadRequest, "alarmDefinitions[0].id")
	e.do("POST", "/v2/recipients/alarms", e.adminToken, map[string]any{"email": "a@b.example", "reportIntervalSeconds": -1}).
		wantError(400, nameBadRequest, "reportIntervalSeconds")
	e.do("POST", "/v2/recipients/alarms", e.viewerToken, map[string]any{"email": "a@b.example"}).wantError(403, nameForbidden)
	e.do("POST", q("/v2/recipients/alarms", e.rivalOrg.ID), e.partnerToken, map[string]any{"email": "a@b.example"}).wantError(404, nameNotFound)
	r = e.do("POST", "/v2/recipients/alarms", e.partnerToken, map[string]any{"email": "noc@partner.example", "reportIntervalSeconds": 600}).want(http.StatusOK)
	if r.str("data.targetEntity") != "partner" || r.id("data.targetId") != e.partnerID {
		t.Fatalf("partner recipient %s", r.raw)
	}
	e.do("POST", "/v2/recipients/health", e.org2Token, map[string]any{"email": "health@two.example"}).wantError(400, nameBadRequest, "reportIntervalSeconds")
	hid := e.do("POST", "/v2/recipients/health", e.org2Token, map[string]any{"email": "health@two.example", "reportIntervalSeconds": 3600}).
		want(http.StatusOK).id("data.id")

	if n := len(e.do("GET", "/v2/recipients/alarms", e.partnerToken, nil).want(http.StatusOK).list("data")); n != 2 {
		t.Fatalf("partner sees %d alarm recipients, want 2", n)
	}
	if n := len(e.do("GET", "/v2/recipients/alarms", e.viewerToken, nil).list("data")); n != 1 {
		t.Fatalf("organization one sees %d alarm recipients, want 1", n)
	}
	if n := len(e.do("GET", "/v2/recipients/alarms", e.rivalToken, nil).list("data")); n != 0 {
		t.Fatalf("rival sees %d recipients", n)
	}
	if n := len(e.do("GET", q("/v2/recipients/health", e.org2.ID), e.partnerToken, nil).list("data")); n != 1 {
		t.Fatalf("partner sees %d health recipients of org two, want 1", n)
	}
	r = e.do("PATCH", fmt.Sprintf("/v2/recipients/alarms/%d", id), e.adminToken, map[string]any{"reportIntervalSeconds": 60, "alarmDefinitions": []map[string]any{}}).
		want(http.StatusOK)
	if r.num("data.reportIntervalSeconds") != 60 || len(r.list("data.alarmDefinitions")) != 0 {
		t.Fatalf("patched %s", r.raw)
	}
	e.do("PATCH", fmt.Sprintf("/v2/recipients/alarms/%d", id), e.org2Token, map[string]any{"reportIntervalSeconds": 5}).wantError(404, nameNotFound)
	e.do("DELETE", fmt.Sprintf("/v2/recipients/alarms/%d", hid), e.org2Token, nil).wantError(404, nameNotFound)
	e.do("DELETE", fmt.Sprintf("/v2/recipients/health/%d", hid), e.adminToken, nil).wantError(404, nameNotFound)
	e.do("DELETE", fmt.Sprintf("/v2/recipients/health/%d", hid), e.org2Token, nil).want(http.StatusOK)
	e.do("DELETE", fmt.Sprintf("/v2/recipients/alarms/%d", id), e.partnerToken, nil).want(http.StatusOK)
	if n := len(e.do("GET", "/v2/recipients/alarms", e.viewerToken, nil).list("data")); n != 0 {
		t.Fatalf("%d recipients left", n)
	}
}
