package cloudapi

import (
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

func TestAuditLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	created := e.do("POST", "/v2/organizations", e.partnerToken, map[string]any{"name": "Acme"}).want(http.StatusOK)
	org := created.id("data.organizationId")
	other := e.newOrg(e.partnerToken, "Other")
	e.clock.Advance(time.Hour)
	mark := e.clock.Now()
	imei := e.newDevice(e.partnerToken, org, testIMEI(1), "Truck")
	e.do("PATCH", "/v2/devices/"+imei, e.partnerToken, map[string]any{"name": "Truck 9"}).want(http.StatusOK)
	e.newDevice(e.partnerToken, other.id, testIMEI(2), "Van")
	user := e.orgUser(org, "ops@acme.example", store.AccessViewer)

	// The organization's creation, with the request that made it.
	r := e.do("GET", "/v2/audit-logs?entityType=organization&entityId="+itoa(org), e.partnerToken, nil).want(http.StatusOK)
	if r.num("metadata.count") != 1 || r.str("data.0.action") != "organization.create" || r.str("data.0.message") != "organization.create" ||
		r.str("data.0.source") != "apiV2" || r.str("data.0.origin") != "api" || r.str("data.0.partnerId") != itoa(e.partnerID) ||
		r.str("data.0.requestId") != created.str("requestId") || r.str("data.0.userEmail") != "partner@example.com" ||
		r.text("data.0.value").str("name") != "Acme" || r.text("data.0.value").get("ssoSalt") != nil {
		t.Fatalf("creation entry %s", r.raw)
	}
	// Previous and new value of an update.
	r = e.do("GET", "/v2/audit-logs?imei="+imei+"&action=device.update", e.partnerToken, nil).want(http.StatusOK)
	if r.num("metadata.count") != 1 || r.text("data.0.previousValue").str("name") != "Truck" || r.text("data.0.value").str("name") != "Truck 9" {
		t.Fatalf("update entry %s", r.raw)
	}

	// Newest first, paginated.
	all := e.do("GET", "/v2/audit-logs", e.partnerToken, nil).want(http.StatusOK)
	n := all.num("metadata.count")
	page := e.do("GET", "/v2/audit-logs?limit=2&offset=1", e.partnerToken, nil).want(http.StatusOK)
	if len(page.list("data")) != 2 || page.num("metadata.count") != n || page.id("data.0.id") != all.id("data.1.id") ||
		all.id("data.0.id") <= all.id("data.1.id") {
		t.Fatalf("pagination: all %s page %s", all.raw, page.raw)
	}

	start := url.QueryEscape(mark.Format(time.RFC3339))
	if got := e.do("GET", "/v2/audit-logs?organizationId="+itoa(org)+"&start="+start, e.partnerToken, nil).want(http.StatusOK); got.num("metadata.count") != 3 {
		// device.create, device.update, user.create of the organization since the mark
		t.Fatalf("organization entries since the mark: %s", got.raw)
	}
	end := url.QueryEscape(mark.Add(-time.Second).Format(time.RFC3339))
	if got := e.do("GET", "/v2/audit-logs?entityType=device&end="+end, e.partnerToken, nil).want(http.StatusOK); got.num("metadata.count") != 0 {
		t.Fatalf("device entries before the mark: %s", got.raw)
	}
	uid := e.do("GET", "/v2/me", e.partnerToken, nil).want(http.StatusOK).id("data.me.id")
	if got := e.do("GET", "/v2/audit-logs?userId="+itoa(uid)+"&entityType=device", e.partnerToken, nil).want(http.StatusOK); got.num("metadata.count") != 3 {
		t.Fatalf("entries by the partner user: %s", got.raw)
	}

	// An organization user reads its organization's entries only.
	mine := e.do("GET", "/v2/audit-logs", user, nil).want(http.StatusOK)
	for _, x := range mine.list("data") {
		if id := x.(map[string]any)["organizationId"]; id != itoa(org) {
			t.Fatalf("organization user reads an entry of organization %v: %s", id, mine.raw)
		}
	}
	if mine.num("metadata.count") < 4 {
		t.Fatalf("organization user reads %v entries", mine.num("metadata.count"))
	}
	e.do("GET", "/v2/audit-logs?organizationId="+itoa(other.id), user, nil).wantError(http.StatusNotFound, nameNotFound)

	// Another partner reads none of it.
	_, tokB := e.newPartner("Partner B", "b@other.example")
	if got := e.do("GET", "/v2/audit-logs?entityType=device", tokB, nil).want(http.StatusOK); got.num("metadata.count") != 0 {
		t.Fatalf("partner B reads %s", got.raw)
	}
	e.do("GET", "/v2/audit-logs?organizationId="+itoa(org), tokB, nil).wantError(http.StatusNotFound, nameNotFound)

	for _, q := range []struct{ query, msg string }{
		{"start=yesterday", "start must be an ISO 8601 date-time"},
		{"end=2026-13-01", "end must be an ISO 8601"},
		{"start=" + start + "&end=" + end, "end must not be before start"},
		{"userId=abc", "userId must be a positive integer"},
		{"organizationId=0", "organizationId must be a positive integer"},
		{"limit=0", "limit must be"},
		{"imei=" + imei + "&entityType=user", "imei filters device entries"},
	} {
		t.Run(q.query, func(t *testing.T) {
			e.do("GET", "/v2/audit-logs?"+q.query, e.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, q.msg)
		})
	}
}

// TestAuditIsAtomic: a refused write leaves no audit entry.
func TestAuditIsAtomic(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	imei := e.newDevice(e.partnerToken, org.id, testIMEI(1), "Truck")
	count := func() float64 {
		return e.do("GET", "/v2/audit-logs", e.partnerToken, nil).want(http.StatusOK).num("metadata.count")
	}
	before := count()
	e.do("POST", orgPath(org.id, "/devices"), e.partnerToken, map[string]any{"imei": imei, "name": "again"}).want(http.StatusConflict)
	e.do("POST", orgPath(org.id, "/groups/999/devices"), e.partnerToken, []string{imei}).want(http.StatusNotFound)
	e.do("PATCH", orgPath(org.id, ""), e.partnerToken, map[string]any{"name": "Renamed", "partnerIds": []int{42}}).want(http.StatusBadRequest)
	if after := count(); after != before {
		t.Fatalf("refused writes left %v audit entries", after-before)
	}
}

// TestAuditEntityTypesAreListed: every entity type an audit entry is
// written with, by the store or the API (EntityType: "…", and the sign-in
// brake's lockout scopes), is one GET /audit-logs?entityType takes.
func TestAuditEntityTypesAreListed(t *testing.T) {
	t.Parallel()
	written := regexp.MustCompile(`EntityType:\s*"(\w+)"|s\.lockout\(c, "(\w+)"`)
	found := map[string]bool{}
	for _, dir := range []string{".", "../store"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range written.FindAllStringSubmatch(string(src), -1) {
				found[m[1]+m[2]] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if !found[entityDevice] || !found["address"] {
		t.Fatalf("the scan found the entity types %v, not those of device changes and lockouts", found)
	}
	for typ := range found {
		if !slices.Contains(auditEntityTypes, typ) {
			t.Errorf("audit entries are written with entityType %q, which GET /audit-logs refuses", typ)
		}
	}
}
