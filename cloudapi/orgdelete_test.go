package cloudapi

import (
	"net/http"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

func TestDeleteOrganization(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	keep := e.newOrg(e.partnerToken, "Keep")
	imei := e.newDevice(e.partnerToken, org.id, testIMEI(1), "Truck")
	e.newGroup(e.partnerToken, org.id, "Trucks")
	_, userTok := e.newUser(e.partnerToken, org.id, "ops@acme.example", store.AccessEditor)
	_, tokB := e.newPartner("Partner B", "b@other.example")
	e.do("POST", "/v2/partners/"+itoa(e.partnerID)+"/contacts", e.partnerToken,
		map[string]any{"email": "viewer@partner.example", "password": "Secret123", "accessLevel": store.AccessViewer}).want(http.StatusOK)
	viewer := e.login("viewer@partner.example", "Secret123")

	tests := []struct {
		name   string
		token  string
		orgID  int64
		status int
		msg    string
	}{
		{"another partner", tokB, org.id, 404, "organization"},
		{"no such organization", e.partnerToken, 999, 404, "organization"},
		{"an organization user", userTok, org.id, 403, "partners only"},
		{"a viewer", viewer, org.id, 403, "viewer"},
		{"with a device", e.partnerToken, org.id, 409, "still holds 1 device(s)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do("DELETE", orgPath(tc.orgID, ""), tc.token, nil).wantError(tc.status, errorName(tc.status), tc.msg)
		})
	}
	e.do("GET", orgPath(org.id, ""), e.partnerToken, nil).want(http.StatusOK)

	// Once its device is removed it goes, with its users.
	e.do("DELETE", orgPath(org.id, "/devices/"+imei), e.partnerToken, nil).want(http.StatusOK)
	r := e.do("DELETE", orgPath(org.id, ""), e.partnerToken, nil).want(http.StatusOK)
	if r.str("requestId") == "" {
		t.Fatalf("%s", r.raw)
	}
	e.do("GET", orgPath(org.id, ""), e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound, "organization")
	e.do("GET", orgPath(org.id, "/groups"), e.partnerToken, nil).want(http.StatusNotFound)
	e.do("GET", "/v2/me", userTok, nil).want(http.StatusUnauthorized)
	list := e.do("GET", "/v2/organizations", e.partnerToken, nil).want(http.StatusOK)
	if list.num("metadata.count") != 1 || list.id("data.0.id") != keep.id {
		t.Fatalf("organizations %s", list.raw)
	}
	e.do("DELETE", orgPath(org.id, ""), e.partnerToken, nil).want(http.StatusNotFound)
	audit := e.do("GET", "/v2/audit-logs?action=organization.delete", e.partnerToken, nil).want(http.StatusOK)
	if audit.num("metadata.count") != 1 {
		t.Fatalf("audit %s", audit.raw)
	}
	// The IMEI can be added elsewhere; the e-mail of its user used again.
	e.newDevice(e.partnerToken, keep.id, imei, "Truck")
	e.newUser(e.partnerToken, keep.id, "ops@acme.example", store.AccessEditor)
}

// TestDeleteSharedOrganization: only the partner that created a shared
// organization deletes it, once neither partner has a device there.
func TestDeleteSharedOrganization(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, tokB, org := e.sharedOrg()
	imei := e.newDevice(tokB, org.id, testIMEI(2), "B van")
	e.do("DELETE", orgPath(org.id, ""), tokB, nil).wantError(http.StatusForbidden, nameForbidden, "only the partner that created organization")
	e.do("DELETE", orgPath(org.id, ""), e.partnerToken, nil).wantError(http.StatusConflict, nameConflict, "1 device(s)")
	e.do("DELETE", orgPath(org.id, "/devices/"+imei), tokB, nil).want(http.StatusOK)
	e.do("DELETE", orgPath(org.id, ""), e.partnerToken, nil).want(http.StatusOK)
	e.do("GET", orgPath(org.id, ""), tokB, nil).want(http.StatusNotFound)
}
