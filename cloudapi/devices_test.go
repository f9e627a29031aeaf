package cloudapi

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

func TestAddDevice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	imei := testIMEI(1)
	r := e.do("POST", orgPath(org.id, "/devices"), e.partnerToken, map[string]any{"imei": imei, "name": "Truck 1"}).want(http.StatusOK)
	if r.str("data.imei") != imei || r.str("data.name") != "Truck 1" || r.str("data.activationStatus") != store.DevicePendingActivation ||
		r.id("data.organizationId") != org.id || r.id("data.partnerId") != e.partnerID || r.get("data.groupId") != nil ||
		r.str("data.connection.status") != ConnectionOffline || r.get("data.connection.desiredConfigVersion") != 0.0 {
		t.Fatalf("unexpected device %s", r.raw)
	}

	other := e.newOrg(e.partnerToken, "Other")
	otherGroup := e.newGroup(e.partnerToken, other.id, "Vans")
	_, tokB := e.newPartner("Partner B", "b@other.example")
	orgB := e.newOrg(tokB, "B fleet")
	bad := testIMEI(2)
	bad = bad[:14] + string('0'+(bad[14]-'0'+1)%10)
	tests := []struct {
		name   string
		token  string
		orgID  int64
		body   any
		status int
		msg    string
	}{
		{"missing imei", e.partnerToken, org.id, map[string]any{"name": "x"}, 400, "imei is required"},
		{"short imei", e.partnerToken, org.id, map[string]any{"imei": "35000000000001", "name": "x"}, 400, "imei must be 15 digits whose last is the Luhn check digit"},
		{"letters", e.partnerToken, org.id, map[string]any{"imei": "35000000000001A", "name": "x"}, 400, "imei must be 15 digits"},
		{"wrong check digit", e.partnerToken, org.id, map[string]any{"imei": bad, "name": "x"}, 400, "Luhn"},
		{"imei as number", e.partnerToken, org.id, map[string]any{"imei": 350000000000014, "name": "x"}, 400, "imei must be a string"},
		{"missing name", e.partnerToken, org.id, map[string]any{"imei": testIMEI(3)}, 400, "name is required"},
		{"group of another organization", e.partnerToken, org.id, map[string]any{"imei": testIMEI(3), "name": "x", "groupId": otherGroup}, 404, "group"},
		{"bad group id", e.partnerToken, org.id, map[string]any{"imei": testIMEI(3), "name": "x", "groupId": -5}, 400, "groupId"},
		{"same IMEI again", e.partnerToken, org.id, map[string]any{"imei": imei, "name": "x"}, 409, "device " + imei + " cannot be added to organization " + itoa(org.id)},
		{"same IMEI elsewhere", tokB, orgB.id, map[string]any{"imei": imei, "name": "x"}, 409, "device " + imei + " cannot be added to organization " + itoa(orgB.id)},
		{"another partner's organization", tokB, org.id, map[string]any{"imei": testIMEI(3), "name": "x"}, 404, "organization"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do("POST", orgPath(tc.orgID, "/devices"), tc.token, tc.body).wantError(tc.status, errorName(tc.status), tc.msg)
		})
	}

	// A device added with groupId -1 is in no group; a group of the
	// organization takes it; the default data profile is applied.
	e.do("PATCH", orgPath(org.id, ""), e.partnerToken, map[string]any{"defaultDataProfileId": 7}).want(http.StatusOK)
	g := e.newGroup(e.partnerToken, org.id, "Trucks")
	d := e.do("POST", orgPath(org.id, "/devices"), e.partnerToken, map[string]any{"imei": testIMEI(4), "name": "T4", "groupId": g}).want(http.StatusOK)
	if d.id("data.groupId") != g || d.num("data.dataProfileId") != 7 {
		t.Fatalf("device with group %s", d.raw)
	}
	e.do("POST", orgPath(org.id, "/devices"), e.partnerToken, map[string]any{"imei": testIMEI(5), "name": "T5", "groupId": -1}).want(http.StatusOK)

	// Organization users add devices of the creating partner; viewers cannot.
	ed := e.orgUser(org.id, "ed@acme.example", store.AccessEditor)
	if p := e.do("POST", orgPath(org.id, "/devices"), ed, map[string]any{"imei": testIMEI(6), "name": "T6"}).want(http.StatusOK).id("data.partnerId"); p != e.partnerID {
		t.Fatalf("partner of an organization user's device: %d", p)
	}
	viewer := e.orgUser(org.id, "v@acme.example", store.AccessViewer)
	e.do("POST", orgPath(org.id, "/devices"), viewer, map[string]any{"imei": testIMEI(7), "name": "T7"}).wantError(http.StatusForbidden, nameForbidden, "viewer")
}

func TestListDevicesPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	for i := range 5 {
		e.newDevice(e.partnerToken, org.id, testIMEI(i), "Truck "+itoa(int64(i)))
	}
	path := orgPath(org.id, "/devices")
	r := e.do("GET", path, e.partnerToken, nil).want(http.StatusOK)
	if len(r.list("data")) != 5 || r.num("metadata.count") != 5 || r.num("metadata.limit") != 100 || r.num("metadata.offset") != 0 {
		t.Fatalf("default page %s", r.raw)
	}
	r = e.do("GET", path+"?limit=2&offset=1", e.partnerToken, nil).want(http.StatusOK)
	if got := imeis(r); len(got) != 2 || got[0] != testIMEI(1) || r.num("metadata.count") != 5 || r.num("metadata.limit") != 2 || r.num("metadata.offset") != 1 {
		t.Fatalf("window %v %s", got, r.raw)
	}
	r = e.do("GET", path+"?offset=9", e.partnerToken, nil).want(http.StatusOK)
	if len(r.list("data")) != 0 || r.list("data") == nil || r.num("metadata.count") != 5 {
		t.Fatalf("past the end %s", r.raw)
	}
	if r := e.do("GET", path+"?limit=1500", e.partnerToken, nil).want(http.StatusOK); r.num("metadata.limit") != 1500 {
		t.Fatalf("maximum limit %s", r.raw)
	}
	for _, q := range []struct{ query, field string }{
		{"limit=0", "limit"}, {"limit=-1", "limit"}, {"limit=1501", "limit"}, {"limit=abc", "limit"}, {"limit=2.5", "limit"}, {"limit=", "limit"},
		{"offset=-1", "offset"}, {"offset=x", "offset"}, {"groupId=x", "groupId"},
	} {
		t.Run(q.query, func(t *testing.T) {
			e.do("GET", path+"?"+q.query, e.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, q.field+" must be")
		})
	}
	// Filters.
	if got := imeis(e.do("GET", path+"?name=truck%203", e.partnerToken, nil).want(http.StatusOK)); len(got) != 1 || got[0] != testIMEI(3) {
		t.Fatalf("name filter %v", got)
	}
	if got := imeis(e.do("GET", path+"?imei="+testIMEI(4), e.partnerToken, nil).want(http.StatusOK)); len(got) != 1 || got[0] != testIMEI(4) {
		t.Fatalf("imei filter %v", got)
	}
	g := e.newGroup(e.partnerToken, org.id, "G")
	e.do("POST", orgPath(org.id, "/groups/"+itoa(g)+"/devices"), e.partnerToken, []string{testIMEI(0), testIMEI(2)}).want(http.StatusOK)
	if got := imeis(e.do("GET", path+"?groupId="+itoa(g), e.partnerToken, nil).want(http.StatusOK)); len(got) != 2 || got[1] != testIMEI(2) {
		t.Fatalf("group filter %v", got)
	}
}

func TestPartnerDevices(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	o1 := e.newOrg(e.partnerToken, "One")
	o2 := e.newOrg(e.partnerToken, "Two")
	e.newDevice(e.partnerToken, o1.id, testIMEI(1), "a")
	e.newDevice(e.partnerToken, o2.id, testIMEI(2), "b")
	_, tokB := e.newPartner("Partner B", "b@other.example")
	e.newDevice(tokB, e.newOrg(tokB, "B").id, testIMEI(3), "c")
	for _, path := range []string{"/v2/partners/devices", "/v2/partner-devices"} {
		r := e.do("GET", path, e.partnerToken, nil).want(http.StatusOK)
		if got := imeis(r); len(got) != 2 || r.num("metadata.count") != 2 {
			t.Fatalf("%s lists %v", path, got)
		}
		if got := imeis(e.do("GET", path+"?limit=1&offset=1", e.partnerToken, nil).want(http.StatusOK)); len(got) != 1 || got[0] != testIMEI(2) {
			t.Fatalf("%s page %v", path, got)
		}
		if got := imeis(e.do("GET", path, tokB, nil).want(http.StatusOK)); len(got) != 1 || got[0] != testIMEI(3) {
			t.Fatalf("%s for B lists %v", path, got)
		}
	}
	user := e.orgUser(o1.id, "u@one.example", store.AccessEditor)
	e.do("GET", "/v2/partners/devices", user, nil).wantError(http.StatusForbidden, nameForbidden, "partners only")
	e.do("GET", "/v2/partner-devices?limit=0", e.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, "limit")
}

// fakePresence is the broker's presence as a table.
type fakePresence struct {
	mu sync.Mutex
	m  map[string]DeviceConnection
}

func (f *fakePresence) Presence(_ *store.Tx, imei string) (DeviceConnection, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.m[imei]
	return c, ok
}

func (f *fakePresence) set(imei string, c DeviceConnection) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[imei] = c
}

func TestGetDeviceConnection(t *testing.T) {
	t.Parallel()
	pres := &fakePresence{m: map[string]DeviceConnection{}}
	e := newEnv(t, func(_ *configs.Config, d *Deps) { d.Presence = pres })
	org := e.newOrg(e.partnerToken, "Acme")
	imei := e.newDevice(e.partnerToken, org.id, testIMEI(1), "Truck")
	r := e.do("GET", "/v2/devices/"+imei, e.partnerToken, nil).want(http.StatusOK)
	if r.str("data.connection.status") != ConnectionOffline || r.get("data.connection.configPending") != false {
		t.Fatalf("never connected %s", r.raw)
	}
	// The store's desired configuration moves ahead; the device acknowledged an older one.
	err := e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		return tx.PutDeviceSettings(&store.DeviceSettings{IMEI: imei, PrivacyMode: "on"}, "test")
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := e.clock.Now().Add(-time.Minute)
	pres.set(imei, DeviceConnection{Status: ConnectionOnline, LastSeen: seen, FirmwareVersion: "3.12.1", ReportedConfigVersion: 0})
	r = e.do("GET", "/v2/devices/"+imei, e.partnerToken, nil).want(http.StatusOK)
	if r.str("data.status") != ConnectionOnline || r.str("data.firmwareVersion") != "3.12.1" ||
		r.str("data.connection.status") != ConnectionOnline || r.str("data.connection.firmwareVersion") != "3.12.1" ||
		r.str("data.connection.lastSeenOnline") != isoTime(seen) || r.num("data.connection.desiredConfigVersion") != 1 ||
		r.get("data.connection.configPending") != true {
		t.Fatalf("connected device %s", r.raw)
	}
	// A reported version above the desired one was never issued: the
	// broker delivers the desired one again, so it is pending.
	pres.set(imei, DeviceConnection{Status: ConnectionOnline, LastSeen: seen, FirmwareVersion: "3.12.1", ReportedConfigVersion: 999999})
	r = e.do("GET", "/v2/devices/"+imei, e.partnerToken, nil).want(http.StatusOK)
	if r.num("data.connection.reportedConfigVersion") != 999999 || r.get("data.connection.configPending") != true {
		t.Fatalf("device reporting a version never issued %s", r.raw)
	}
	list := e.do("GET", orgPath(org.id, "/devices"), e.partnerToken, nil).want(http.StatusOK)
	if list.str("data.0.connection.status") != ConnectionOnline {
		t.Fatalf("list without connection %s", list.raw)
	}

	_, tokB := e.newPartner("Partner B", "b@other.example")
	other := e.newOrg(e.partnerToken, "Other")
	otherUser := e.orgUser(other.id, "u@other.example", store.AccessEditor)
	for name, tok := range map[string]string{"another partner": tokB, "another organization's user": otherUser} {
		t.Run(name, func(t *testing.T) {
			e.do("GET", "/v2/devices/"+imei, tok, nil).wantError(http.StatusNotFound, nameNotFound, "device")
		})
	}
	e.do("GET", "/v2/devices/"+testIMEI(9), e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound)
}

func TestUpdateDevice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	imei := e.newDevice(e.partnerToken, org.id, testIMEI(1), "Truck")
	g := e.newGroup(e.partnerToken, org.id, "Trucks")
	path := "/v2/devices/" + imei

	r := e.do("PATCH", path, e.partnerToken, map[string]any{"name": "Truck 7", "groupId": g}).want(http.StatusOK)
	if r.str("data.name") != "Truck 7" || r.id("data.groupId") != g || r.str("data.activationStatus") != store.DevicePendingActivation {
		t.Fatalf("rename %s", r.raw)
	}
	if r := e.do("PATCH", path, e.partnerToken, map[string]any{"groupId": -1}).want(http.StatusOK); r.get("data.groupId") != nil || r.str("data.name") != "Truck 7" {
		t.Fatalf("ungroup %s", r.raw)
	}

	steps := []struct {
		to     string
		status int
	}{
		{store.DeviceSuspended, 400}, // pending devices are activated first
		{store.DeviceActivated, 200},
		{store.DevicePendingActivation, 400},
		{store.DeviceSuspended, 200},
		{store.DeviceActivated, 200},
		{store.DeviceDeactivated, 200},
		{store.DeviceSuspended, 400},
		{store.DeviceActivated, 200},
	}
	for i, st := range steps {
		r := e.do("PATCH", path, e.partnerToken, map[string]any{"activationStatus": st.to})
		if st.status != 200 {
			r.wantError(st.status, nameBadRequest, "activationStatus cannot change from")
			continue
		}
		r.want(200)
		if r.str("data.activationStatus") != st.to {
			t.Fatalf("step %d: %s", i, r.raw)
		}
		if r.str("data.activatedAt") != isoTime(e.clock.Now()) {
			t.Fatalf("step %d: activatedAt %q", i, r.str("data.activatedAt"))
		}
	}

	other := e.newOrg(e.partnerToken, "Other")
	otherGroup := e.newGroup(e.partnerToken, other.id, "Elsewhere")
	ed := e.orgUser(org.id, "ed@acme.example", store.AccessEditor)
	viewer := e.orgUser(org.id, "v@acme.example", store.AccessViewer)
	tests := []struct {
		name   string
		token  string
		body   any
		status int
		msg    string
	}{
		{"empty", e.partnerToken, map[string]any{}, 400, "at least one of name, groupId, activationStatus"},
		{"bad status", e.partnerToken, map[string]any{"activationStatus": "broken"}, 400, "activationStatus must be one of pendingActivation, activated, deactivated, suspended"},
		{"blank name", e.partnerToken, map[string]any{"name": " "}, 400, "name is required"},
		{"group of another organization", e.partnerToken, map[string]any{"groupId": otherGroup}, 404, "group"},
		{"unknown field", e.partnerToken, map[string]any{"organizationId": other.id}, 400, "organizationId is not a known field"},
		{"organization user changes status", ed, map[string]any{"activationStatus": store.DeviceSuspended}, 403, "only the device's partner"},
		{"viewer", viewer, map[string]any{"name": "x"}, 403, "viewer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do("PATCH", path, tc.token, tc.body).wantError(tc.status, errorName(tc.status), tc.msg)
		})
	}
	e.do("PATCH", path, ed, map[string]any{"name": "By the fleet manager"}).want(http.StatusOK)
}

func TestRemoveDevice(t *testing.T) {
	t.Parallel()
	cmd := newRecordingCommander()
	e := newEnv(t, func(_ *configs.Config, d *Deps) { d.Commander = cmd })
	org := e.newOrg(e.partnerToken, "Acme")
	other := e.newOrg(e.partnerToken, "Other")
	imei := e.newDevice(e.partnerToken, org.id, testIMEI(1), "Truck")

	e.do("DELETE", orgPath(other.id, "/devices/"+imei), e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound)
	viewer := e.orgUser(org.id, "v@acme.example", store.AccessViewer)
	e.do("DELETE", orgPath(org.id, "/devices/"+imei), viewer, nil).wantError(http.StatusForbidden, nameForbidden)

	if got := cmd.disconnected(); len(got) != 0 {
		t.Fatalf("refused removals disconnected %v", got)
	}
	r := e.do("DELETE", orgPath(org.id, "/devices/"+imei), e.partnerToken, nil).want(http.StatusOK)
	if got := cmd.disconnected(); !slices.Equal(got, []string{imei}) {
		t.Fatalf("removal disconnected %v, want the device", got)
	}
	e.do("GET", "/v2/devices/"+imei, e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("DELETE", orgPath(org.id, "/devices/"+imei), e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound)

	// The removal left a deviceRemoved system message for the webhooks.
	msgs := allMessages(t, e.db)
	var found bool
	for _, m := range msgs {
		if m.Kind == store.MessageSystem && m.SubType == store.SystemDeviceRemoved && m.IMEI == imei && m.OrganizationID == org.id {
			found = m.Removed != nil && m.Removed.Name == "Truck"
		}
	}
	if !found {
		t.Fatalf("no deviceRemoved message in %+v", msgs)
	}
	a := e.do("GET", "/v2/audit-logs?action=device.remove", e.partnerToken, nil).want(http.StatusOK)
	if a.num("metadata.count") != 1 || a.str("data.0.entityId") != imei || a.str("data.0.requestId") != r.str("requestId") {
		t.Fatalf("audit of the removal %s", a.raw)
	}
	// The IMEI is free for another organization.
	e.newDevice(e.partnerToken, other.id, imei, "Moved")
}

func TestGroups(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	other := e.newOrg(e.partnerToken, "Other")
	d1 := e.newDevice(e.partnerToken, org.id, testIMEI(1), "a")
	d2 := e.newDevice(e.partnerToken, org.id, testIMEI(2), "b")
	elsewhere := e.newDevice(e.partnerToken, other.id, testIMEI(3), "c")

	g1 := e.newGroup(e.partnerToken, org.id, "Trucks")
	g2 := e.newGroup(e.partnerToken, org.id, "Vans")
	e.do("POST", orgPath(org.id, "/groups"), e.partnerToken, map[string]any{"name": "trucks"}).wantError(http.StatusConflict, nameConflict, "already exists")
	e.do("POST", orgPath(org.id, "/groups"), e.partnerToken, map[string]any{}).wantError(http.StatusBadRequest, nameBadRequest, "name is required")
	e.newGroup(e.partnerToken, other.id, "Trucks") // names are per organization

	l := e.do("GET", orgPath(org.id, "/groups"), e.partnerToken, nil).want(http.StatusOK)
	if l.num("metadata.count") != 2 || l.str("data.1.name") != "Vans" || l.id("data.0.id") != g1 {
		t.Fatalf("groups %s", l.raw)
	}

	assign := orgPath(org.id, "/groups/"+itoa(g1)+"/devices")
	r := e.do("POST", assign, e.partnerToken, []string{d1, d2}).want(http.StatusOK)
	if len(r.list("data.moved")) != 2 {
		t.Fatalf("assign %s", r.raw)
	}
	// Moving into another group leaves the first.
	e.do("POST", orgPath(org.id, "/groups/"+itoa(g2)+"/devices"), e.partnerToken, []string{d2}).want(http.StatusOK)
	if got := imeis(e.do("GET", orgPath(org.id, "/devices?groupId="+itoa(g1)), e.partnerToken, nil).want(http.StatusOK)); len(got) != 1 || got[0] != d1 {
		t.Fatalf("group 1 holds %v", got)
	}

	tests := []struct {
		name   string
		path   string
		body   any
		status int
		msg    string
	}{
		{"device of another organization", assign, []string{d2, elsewhere}, 404, "device " + elsewhere},
		{"unknown device", assign, []string{testIMEI(8)}, 404, "device"},
		{"not an IMEI", assign, []string{"123"}, 400, "[0] is not an IMEI"},
		{"empty", assign, []string{}, 400, "non-empty array"},
		{"object body", assign, map[string]any{"imeis": []string{d1}}, 400, "array"},
		{"group of another organization", orgPath(other.id, "/groups/"+itoa(g1)+"/devices"), []string{elsewhere}, 404, "group"},
		{"unknown group", orgPath(org.id, "/groups/999/devices"), []string{d1}, 404, "group"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do("POST", tc.path, e.partnerToken, tc.body).wantError(tc.status, errorName(tc.status), tc.msg)
		})
	}
	// The refused assignment changed nothing.
	if g := e.do("GET", "/v2/devices/"+d2, e.partnerToken, nil).want(http.StatusOK).id("data.groupId"); g != g2 {
		t.Fatalf("device moved by a refused call: group %d", g)
	}
	_, tokB := e.newPartner("Partner B", "b@other.example")
	e.do("GET", orgPath(org.id, "/groups"), tokB, nil).wantError(http.StatusNotFound, nameNotFound)
}
