package cloudapi

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// Builders for the API tests: each goes through the API as a client would.

// testIMEI returns the n-th valid IMEI: 14 digits of n and the Luhn check digit.
func testIMEI(n int) string {
	body := fmt.Sprintf("35%012d", n)
	for d := 0; d <= 9; d++ {
		if s := body + strconv.Itoa(d); store.ValidIMEI(s) {
			return s
		}
	}
	panic("no check digit")
}

// createdOrg is an organization made through POST /organizations.
type createdOrg struct {
	id     int64
	secret string
}

// newOrg creates an organization with the given token (a partner's).
func (e *testEnv) newOrg(token, name string) createdOrg {
	e.t.Helper()
	r := e.do("POST", "/v2/organizations", token, map[string]any{"name": name}).want(http.StatusOK)
	return createdOrg{id: r.id("data.organizationId"), secret: r.str("data.ssoSecret")}
}

// newDevice adds a device to an organization and returns its IMEI.
func (e *testEnv) newDevice(token string, orgID int64, imei, name string) string {
	e.t.Helper()
	e.do("POST", orgPath(orgID, "/devices"), token, map[string]any{"imei": imei, "name": name}).want(http.StatusOK)
	return imei
}

// newGroup creates a group and returns its id.
func (e *testEnv) newGroup(token string, orgID int64, name string) int64 {
	e.t.Helper()
	return e.do("POST", orgPath(orgID, "/groups"), token, map[string]any{"name": name}).want(http.StatusOK).id("data.id")
}

// newPartner adds a partner with one user and returns its id and a token.
func (e *testEnv) newPartner(name, email string) (int64, string) {
	e.t.Helper()
	id := e.addPartner(name, email, "Secret123")
	return id, e.login(email, "Secret123")
}

// orgUser adds an organization user with the access level and returns its token.
func (e *testEnv) orgUser(orgID int64, email, level string) string {
	e.t.Helper()
	e.addOrgUser(orgID, email, "Secret123", level)
	return e.login(email, "Secret123")
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func orgPath(orgID int64, rest string) string {
	return "/v2/organizations/" + strconv.FormatInt(orgID, 10) + rest
}

// imeis collects the imei members of a device list answer.
func imeis(r *response) []string {
	var out []string
	for _, d := range r.list("data") {
		out = append(out, d.(map[string]any)["imei"].(string))
	}
	return out
}

func TestTestIMEIIsValid(t *testing.T) {
	t.Parallel()
	for n := range 50 {
		if s := testIMEI(n); len(s) != 15 || !store.ValidIMEI(s) {
			t.Fatalf("testIMEI(%d) = %q", n, s)
		}
	}
}

// allMessages returns every webhook message still in the store, oldest first.
func allMessages(t testing.TB, db *store.DB) []store.Message {
	t.Helper()
	var out []store.Message
	err := db.View(t.Context(), func(tx *store.Tx) error {
		var err error
		out, err = tx.MessagesAfter(0, 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
