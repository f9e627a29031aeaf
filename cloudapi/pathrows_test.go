package cloudapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/fleetcam/fleetcam/store"
)

// TestViewsTakeThePathRowsUntilTheRequestWrites: the organization and the
// device a request's path names, read by its authentication, answer its
// views (a change another request makes meanwhile is not seen, as if the
// request had come a moment earlier), never a transaction that writes,
// and no view once the request has written; what a caller changes in one
// answer is not in the next, and an organization or device the path does
// not name is read from the store.
func TestViewsTakeThePathRowsUntilTheRequestWrites(t *testing.T) {
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Fleet")
	imei := e.newDevice(e.partnerToken, org.id, testIMEI(1), "Van")
	other := e.newDevice(e.partnerToken, org.id, testIMEI(2), "Truck")

	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(http.MethodGet, "/", nil)
	c.Params = gin.Params{{Key: "orgId", Value: strconv.FormatInt(org.id, 10)}, {Key: "imei", Value: imei}}
	ctx := store.TrackWrites(c.Request.Context())
	c.Request = c.Request.WithContext(ctx)
	if along := pathReads(c); len(along.Organizations) != 1 || along.Organizations[0] != org.id ||
		len(along.Devices) != 1 || along.Devices[0] != imei {
		t.Fatalf("the path's reads: %+v", along)
	}
	err := e.api.authView(c, func(tx *store.Tx) error { return nil })
	if err != nil {
		t.Fatal(err)
	}

	// Another request renames the device and the organization.
	e.do(http.MethodPatch, "/v2/devices/"+imei, e.partnerToken, map[string]any{"name": "Van 2"}).want(http.StatusOK)
	e.do(http.MethodPatch, orgPath(org.id, ""), e.partnerToken, map[string]any{"name": "Fleet 2"}).want(http.StatusOK)

	names := func(what string, run func(func(*store.Tx) error) error) (string, string) {
		t.Helper()
		var device, organization string
		err := run(func(tx *store.Tx) error {
			d, err := readDevice(c, tx, imei)
			if err != nil {
				return err
			}
			o, err := readOrg(c, tx, org.id)
			if err != nil {
				return err
			}
			device, organization = d.Name, o.Name
			// The answer is the caller's to change.
			d.Name, o.Name = "changed", "changed"
			if len(o.PartnerIDs) > 0 {
				o.PartnerIDs[0] = -1
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return device, organization
	}
	view := func(fn func(*store.Tx) error) error { return e.db.View(ctx, fn) }
	update := func(fn func(*store.Tx) error) error {
		return e.db.Update(context.Background(), store.Actor{Source: "test"}, fn)
	}
	for range 2 {
		if d, o := names("a view", view); d != "Van" || o != "Fleet" {
			t.Errorf("a view of the request reads %q and %q, want the rows its authentication read: Van and Fleet", d, o)
		}
	}
	err = e.db.View(ctx, func(tx *store.Tx) error {
		o, err := readOrg(c, tx, org.id)
		if err != nil {
			return err
		}
		if len(o.PartnerIDs) != 1 || o.PartnerIDs[0] != e.partnerID {
			t.Errorf("the organization's partners %v after a caller changed an answer's, want [%d]", o.PartnerIDs, e.partnerID)
		}
		if d, err := readDevice(c, tx, other); err != nil || d.Name != "Truck" {
			t.Errorf("a device the path does not name: %+v, %v; want Truck from the store", d, err)
		}
		if _, err := readOrg(c, tx, org.id+1000); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("an organization the path does not name, not in the store: %v, want ErrNotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d, o := names("a transaction that writes", update); d != "Van 2" || o != "Fleet 2" {
		t.Errorf("a transaction that writes reads %q and %q, want the stored Van 2 and Fleet 2", d, o)
	}

	// Once the request writes, its views read the store.
	if err := e.db.Update(ctx, store.Actor{Source: "test"}, func(*store.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if !store.Wrote(ctx) {
		t.Fatal("store.Wrote is false after a transaction that may write ran for the context")
	}
	if d, o := names("a view after the request wrote", view); d != "Van 2" || o != "Fleet 2" {
		t.Errorf("a view after the request wrote reads %q and %q, want the stored Van 2 and Fleet 2", d, o)
	}
}
