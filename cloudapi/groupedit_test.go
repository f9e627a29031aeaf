package cloudapi

import (
	"net/http"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

func TestGroupEdit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	trucks := e.newGroup(e.partnerToken, org.id, "Trucks")
	vans := e.newGroup(e.partnerToken, org.id, "Vans")
	other := e.newOrg(e.partnerToken, "Other")
	otherGroup := e.newGroup(e.partnerToken, other.id, "Buses")
	e.do("POST", orgPath(org.id, "/bulk-devices"), e.partnerToken, []map[string]any{
		{"imei": testIMEI(1), "name": "T1", "groupId": trucks}, {"imei": testIMEI(2), "name": "T2", "groupId": trucks},
		{"imei": testIMEI(3), "name": "V1", "groupId": vans}}).want(http.StatusOK)
	_, tokB := e.newPartner("Partner B", "b@other.example")
	viewer := e.orgUser(org.id, "viewer@acme.example", store.AccessViewer)

	// Renaming keeps the devices.
	r := e.do("PUT", orgPath(org.id, "/groups"), e.partnerToken, map[string]any{"groupId": trucks, "name": " Lorries "}).want(http.StatusOK)
	if r.str("data.name") != "Lorries" || r.id("data.id") != trucks {
		t.Fatalf("%s", r.raw)
	}
	list := e.do("GET", orgPath(org.id, "/groups"), e.partnerToken, nil).want(http.StatusOK)
	if list.str("data.0.name") != "Lorries" || list.str("data.1.name") != "Vans" {
		t.Fatalf("groups %s", list.raw)
	}
	if got := e.do("GET", "/v2/devices/"+testIMEI(1), e.partnerToken, nil).want(http.StatusOK).id("data.groupId"); got != trucks {
		t.Fatalf("device in group %d after the rename", got)
	}
	// The same name again is no conflict with itself.
	e.do("PUT", orgPath(org.id, "/groups"), e.partnerToken, map[string]any{"groupId": trucks, "name": "lorries"}).want(http.StatusOK)

	tests := []struct {
		name   string
		method string
		token  string
		orgID  int64
		body   any
		status int
		msg    string
	}{
		{"rename without groupId", "PUT", e.partnerToken, org.id, map[string]any{"name": "x"}, 400, "groupId is required"},
		{"rename with groupId 0", "PUT", e.partnerToken, org.id, map[string]any{"groupId": 0, "name": "x"}, 400, "groupId must be a group id"},
		{"rename without name", "PUT", e.partnerToken, org.id, map[string]any{"groupId": vans}, 400, "name is required"},
		{"rename to blank", "PUT", e.partnerToken, org.id, map[string]any{"groupId": vans, "name": "  "}, 400, "name is required"},
		{"rename to a taken name", "PUT", e.partnerToken, org.id, map[string]any{"groupId": vans, "name": "LORRIES"}, 409, "already exists"},
		{"rename another organization's group", "PUT", e.partnerToken, org.id, map[string]any{"groupId": otherGroup, "name": "x"}, 404, "group"},
		{"rename in another partner's organization", "PUT", tokB, org.id, map[string]any{"groupId": vans, "name": "x"}, 404, "organization"},
		{"rename by a viewer", "PUT", viewer, org.id, map[string]any{"groupId": vans, "name": "x"}, 403, "viewer"},
		{"delete without groupId", "DELETE", e.partnerToken, org.id, map[string]any{}, 400, "groupId is required"},
		{"delete with a name", "DELETE", e.partnerToken, org.id, map[string]any{"groupId": vans, "name": "Vans"}, 400, "name"},
		{"delete another organization's group", "DELETE", e.partnerToken, org.id, map[string]any{"groupId": otherGroup}, 404, "group"},
		{"delete in another partner's organization", "DELETE", tokB, org.id, map[string]any{"groupId": vans}, 404, "organization"},
		{"delete by a viewer", "DELETE", viewer, org.id, map[string]any{"groupId": vans}, 403, "viewer"},
		{"delete a group that is not there", "DELETE", e.partnerToken, org.id, map[string]any{"groupId": 999}, 404, "group 999"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do(tc.method, orgPath(tc.orgID, "/groups"), tc.token, tc.body).wantError(tc.status, errorName(tc.status), tc.msg)
		})
	}

	// Deleting leaves the devices in the organization, in no group.
	moves := e.auditActions("device.group")
	r = e.do("DELETE", orgPath(org.id, "/groups"), e.partnerToken, map[string]any{"groupId": trucks}).want(http.StatusOK)
	if got := r.list("data.ungrouped"); len(got) != 2 || got[0] != testIMEI(1) || got[1] != testIMEI(2) {
		t.Fatalf("%s", r.raw)
	}
	for _, imei := range []string{testIMEI(1), testIMEI(2)} {
		d := e.do("GET", "/v2/devices/"+imei, e.partnerToken, nil).want(http.StatusOK)
		if d.get("data.groupId") != nil || d.id("data.organizationId") != org.id {
			t.Fatalf("device after the delete: %s", d.raw)
		}
	}
	if got := e.do("GET", "/v2/devices/"+testIMEI(3), e.partnerToken, nil).id("data.groupId"); got != vans {
		t.Fatalf("a device of another group moved to %d", got)
	}
	if n := e.auditActions("device.group") - moves; n != 2 || e.auditActions("group.delete") != 1 || e.auditActions("group.update") != 2 {
		t.Fatalf("audit: %d moves, %d deletes, %d updates", n, e.auditActions("group.delete"), e.auditActions("group.update"))
	}
	if n := e.do("GET", orgPath(org.id, "/groups"), e.partnerToken, nil).num("metadata.count"); n != 1 {
		t.Fatalf("%v groups left", n)
	}
	e.do("DELETE", orgPath(org.id, "/groups"), e.partnerToken, map[string]any{"groupId": trucks}).want(http.StatusNotFound)
}
