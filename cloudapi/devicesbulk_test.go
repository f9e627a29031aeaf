package cloudapi

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// auditActions counts the audit entries of action.
func (e *testEnv) auditActions(action string) int {
	e.t.Helper()
	_, n, err := e.db.AuditLog(e.t.Context(), store.AuditFilter{Action: action}, store.Page{Limit: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func TestBulkDevices(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/bulk-devices", "/partner-bulk-devices"} {
		t.Run(path, func(t *testing.T) {
			e := newEnv(t)
			method := "POST"
			if path == "/partner-bulk-devices" {
				method = "PUT"
			}
			org := e.newOrg(e.partnerToken, "Acme")
			g := e.newGroup(e.partnerToken, org.id, "Trucks")
			other := e.newOrg(e.partnerToken, "Other")
			otherGroup := e.newGroup(e.partnerToken, other.id, "Vans")
			taken := e.newDevice(e.partnerToken, other.id, testIMEI(9), "Elsewhere")
			before := e.auditActions("device.create")

			r := e.do(method, orgPath(org.id, path), e.partnerToken, []map[string]any{
				{"imei": testIMEI(1), "name": "Truck 1", "groupId": g},
				{"imei": testIMEI(2), "name": "Truck 2", "groupId": -1},
				{"imei": testIMEI(3), "name": "Truck 3", "groupId": otherGroup},
				{"imei": taken, "name": "Taken"},
				{"imei": testIMEI(1), "name": "Twice"},
			}).want(http.StatusOK)
			acc, rej := r.list("data.accepted"), r.list("data.rejected")
			if len(acc) != 2 || len(rej) != 3 {
				t.Fatalf("accepted %d rejected %d: %s", len(acc), len(rej), r.raw)
			}
			if r.str("data.accepted.0.imei") != testIMEI(1) || strconv.FormatFloat(r.num("data.accepted.0.serialNumber"), 'f', 0, 64) != testIMEI(1) ||
				r.num("data.accepted.0.edgeId") == 0 {
				t.Fatalf("accepted %s", r.raw)
			}
			wantRej := []struct {
				imei string
				code float64
			}{{testIMEI(3), rejectGroupNotFound}, {taken, rejectAlreadyAssigned}, {testIMEI(1), rejectAlreadyAssigned}}
			for i, w := range wantRej {
				p := "data.rejected." + strconv.Itoa(i)
				if r.str(p+".imei") != w.imei || r.num(p+".errorCode") != w.code || r.str(p+".reason") == "" {
					t.Fatalf("rejected %d: %s", i, r.raw)
				}
			}
			// The accepted devices are in the organization, in their group, and audited.
			d := e.do("GET", "/v2/devices/"+testIMEI(1), e.partnerToken, nil).want(http.StatusOK)
			if d.id("data.organizationId") != org.id || d.id("data.groupId") != g {
				t.Fatalf("device %s", d.raw)
			}
			e.do("GET", "/v2/devices/"+testIMEI(3), e.partnerToken, nil).want(http.StatusNotFound)
			if got := e.do("GET", "/v2/devices/"+taken, e.partnerToken, nil).want(http.StatusOK).id("data.organizationId"); got != other.id {
				t.Fatalf("the device taken moved to %d", got)
			}
			if n := e.auditActions("device.create") - before; n != 2 {
				t.Fatalf("%d device.create entries, want 2", n)
			}

			_, tokB := e.newPartner("Partner B", "b@other.example")
			e.do("POST", "/v2/partners/"+itoa(e.partnerID)+"/contacts", e.partnerToken,
				map[string]any{"email": "viewer@partner.example", "password": "Secret123", "accessLevel": store.AccessViewer}).want(http.StatusOK)
			viewer := e.login("viewer@partner.example", "Secret123")
			many := make([]map[string]any, maxBulkDevices+1)
			for i := range many {
				many[i] = map[string]any{"imei": testIMEI(100 + i), "name": "x"}
			}
			tests := []struct {
				name   string
				token  string
				body   any
				status int
				msg    string
			}{
				{"empty list", e.partnerToken, []any{}, 400, "non-empty array"},
				{"not a list", e.partnerToken, map[string]any{"imei": testIMEI(4)}, 400, "array"},
				{"too many", e.partnerToken, many, 400, "at most 500 devices"},
				{"bad imei", e.partnerToken, []map[string]any{{"imei": testIMEI(4), "name": "a"}, {"imei": "123", "name": "b"}}, 400, "[1].imei must be 15 digits"},
				{"no name", e.partnerToken, []map[string]any{{"imei": testIMEI(4)}}, 400, "[0].name is required"},
				{"bad group", e.partnerToken, []map[string]any{{"imei": testIMEI(4), "name": "a", "groupId": -3}}, 400, "[0].groupId"},
				{"another partner", tokB, []map[string]any{{"imei": testIMEI(4), "name": "a"}}, 404, "organization"},
				{"viewer", viewer, []map[string]any{{"imei": testIMEI(4), "name": "a"}}, 403, "viewer"},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					e.do(method, orgPath(org.id, path), tc.token, tc.body).wantError(tc.status, errorName(tc.status), tc.msg)
				})
			}
			e.do("GET", "/v2/devices/"+testIMEI(4), e.partnerToken, nil).want(http.StatusNotFound)
		})
	}
}

func TestBulkDevicesPartnersOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	user := e.orgUser(org.id, "ops@acme.example", store.AccessEditor)
	e.do("PUT", orgPath(org.id, "/partner-bulk-devices"), user, []map[string]any{{"imei": testIMEI(1), "name": "a"}}).
		wantError(http.StatusForbidden, nameForbidden, "partners only")
	// An organization editor adds with the other call, as the organization's partner.
	r := e.do("POST", orgPath(org.id, "/bulk-devices"), user, []map[string]any{{"imei": testIMEI(1), "name": "a"}}).want(http.StatusOK)
	if len(r.list("data.accepted")) != 1 {
		t.Fatalf("%s", r.raw)
	}
}

func TestWhiteLabelInformation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	host := e.srv.Listener.Addr().String()
	r := e.do("GET", "/v2/white-label-information/"+host, "", nil).want(http.StatusOK)
	if r.str("data.whiteLabelName") != whiteLabelName || r.str("data.whiteLabelDomainAddress") != host ||
		r.str("data.whiteLabelThemeColor") != whiteLabelThemeColor || r.str("data.whiteLabelInfoEmail") != e.cfg.SMTP.From {
		t.Fatalf("%s", r.raw)
	}
	e.do("GET", "/v2/white-label-information/127.0.0.1", "", nil).want(http.StatusOK)
	e.do("GET", "/v2/white-label-information/login.other.example", "", nil).wantError(http.StatusNotFound, nameNotFound, "login.other.example")
	e.do("GET", "/v2/white-label-information/a@b", "", nil).wantError(http.StatusBadRequest, nameBadRequest, "whiteLabelDomainAddress")
}
