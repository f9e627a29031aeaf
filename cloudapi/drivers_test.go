package cloudapi

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
	"github.com/makiuchi-d/gozxing"
	gozxingqr "github.com/makiuchi-d/gozxing/qrcode"
)

func driverItem(org int64, thirdParty string, extra ...string) map[string]any {
	m := map[string]any{"driverThirdPartyId": thirdParty}
	if org != 0 {
		m["organizationId"] = org
	}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

func data(items ...map[string]any) map[string]any { return map[string]any{"data": items} }

func TestCreateDriversOrganizationRules(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	org := e.org.ID
	tests := []struct {
		name   string
		token  string
		path   string
		body   any
		status int
		error  string
		msg    []string
	}{
		{"partner without query organizationId", e.partnerToken, "/v2/drivers", data(driverItem(org, "d1")), 400, nameBadRequest, []string{"organizationId", "query"}},
		{"partner without body organizationId", e.partnerToken, q("/v2/drivers", org), data(driverItem(0, "d1")), 400, nameBadRequest, []string{"data[0].organizationId", "required"}},
		{"partner with a different body organizationId", e.partnerToken, q("/v2/drivers", org), data(driverItem(e.org2.ID, "d1")), 400, nameBadRequest, []string{"data[0].organizationId", "must equal"}},
		{"partner naming another partner's organization", e.partnerToken, q("/v2/drivers", e.rivalOrg.ID), data(driverItem(e.rivalOrg.ID, "d1")), 404, nameNotFound, []string{"organization"}},
		{"partner naming a missing organization", e.partnerToken, q("/v2/drivers", 999), data(driverItem(999, "d1")), 404, nameNotFound, nil},
		{"malformed organizationId", e.partnerToken, "/v2/drivers?organizationId=x", data(driverItem(org, "d1")), 400, nameBadRequest, []string{"organizationId", "positive integer"}},
		{"organization user naming another organization", e.adminToken, q("/v2/drivers", e.org2.ID), data(driverItem(0, "d1")), 404, nameNotFound, nil},
		{"viewer", e.viewerToken, "/v2/drivers", data(driverItem(0, "d1")), 403, nameForbidden, []string{"viewer"}},
		{"missing third-party id", e.adminToken, "/v2/drivers", data(map[string]any{"firstName": "Ann"}), 400, nameBadRequest, []string{"data[0].driverThirdPartyId", "required"}},
		{"bad PIN", e.adminToken, "/v2/drivers", data(driverItem(0, "d1", "driverCode", "12")), 400, nameBadRequest, []string{"data[0]", "driverCode", "5 digits"}},
		{"short name", e.adminToken, "/v2/drivers", data(driverItem(0, "d1", "firstName", "A")), 400, nameBadRequest, []string{"firstName"}},
		{"unknown member", e.adminToken, "/v2/drivers", data(driverItem(0, "d1", "isActive", "x")), 400, nameBadRequest, []string{"isActive"}},
		{"empty data", e.adminToken, "/v2/drivers", map[string]any{"data": []any{}}, 400, nameBadRequest, []string{"data"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.do("POST", tt.path, tt.token, tt.body).wantError(tt.status, tt.error, tt.msg...)
		})
	}
	r := e.do("POST", q("/v2/drivers", org), e.partnerToken, data(driverItem(org, "moshe123", "firstName", "Moshe", "lastName", "Cohen"),
		driverItem(org, "ann", "firstName", "Ann", "driverCode", "24680"))).want(http.StatusCreated)
	if code := r.str("data.0.driverCode"); len(code) != 5 || r.str("data.1.driverCode") != "24680" || r.str("data.0.id") == "" {
		t.Fatalf("created %s", r.raw)
	}
	e.do("POST", "/v2/drivers", e.adminToken, data(driverItem(0, "moshe123"))).wantError(409, nameConflict, "data[0]", "moshe123")
	e.do("POST", "/v2/drivers", e.adminToken, data(driverItem(0, "x", "driverCode", "24680"))).wantError(409, nameConflict, "24680")
	// An organization's PINs and third-party ids are its own.
	e.do("POST", "/v2/drivers", e.org2Token, data(driverItem(0, "moshe123", "driverCode", "24680"))).want(http.StatusCreated)
	// Every device of the organization gets the new credentials.
	_, _, pushed := e.cmd.snapshot()
	if strings.Count(strings.Join(pushed, ","), e.devices[0]) == 0 {
		t.Fatalf("configuration not pushed to %s: %v", e.devices[0], pushed)
	}
	entries, _, _ := e.db.AuditLog(t.Context(), store.AuditFilter{Action: "driver.create"}, store.Page{})
	if len(entries) != 3 {
		t.Fatalf("%d driver.create audit entries, want 3", len(entries))
	}
}

func TestListAndChangeDrivers(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	e.do("POST", "/v2/drivers", e.adminToken, data(driverItem(0, "a", "firstName", "Zoe"), driverItem(0, "b", "firstName", "adam"),
		driverItem(0, "c", "firstName", "Bob"))).want(http.StatusCreated)
	e.do("POST", "/v2/drivers", e.org2Token, data(driverItem(0, "z", "firstName", "Zed"))).want(http.StatusCreated)

	r := e.do("GET", "/v2/drivers", e.partnerToken, nil).want(http.StatusOK)
	if r.num("metadata.count") != 4 {
		t.Fatalf("partner sees %v drivers, want 4 in its two organizations", r.num("metadata.count"))
	}
	e.do("GET", "/v2/drivers", e.rivalToken, nil).want(http.StatusOK)
	if n := e.do("GET", "/v2/drivers", e.rivalToken, nil).num("metadata.count"); n != 0 {
		t.Fatalf("rival partner sees %v drivers", n)
	}
	e.do("GET", q("/v2/drivers", e.org.ID), e.rivalToken, nil).wantError(404, nameNotFound)
	e.do("GET", q("/v2/drivers", e.org2.ID), e.adminToken, nil).wantError(404, nameNotFound)
	r = e.do("GET", "/v2/drivers?sort=firstName&order=asc&limit=2&offset=1", e.viewerToken, nil).want(http.StatusOK)
	if r.num("metadata.count") != 3 || r.num("metadata.limit") != 2 || r.num("metadata.offset") != 1 ||
		r.str("data.0.firstName") != "Bob" || r.str("data.1.firstName") != "Zoe" {
		t.Fatalf("sorted page %s", r.raw)
	}
	r = e.do("GET", "/v2/drivers?driverFirstName=^a", e.adminToken, nil).want(http.StatusOK)
	if r.num("metadata.count") != 1 || r.str("data.0.driverThirdPartyId") != "b" {
		t.Fatalf("regex filter %s", r.raw)
	}
	e.do("GET", "/v2/drivers?driverFirstName=(", e.adminToken, nil).wantError(400, nameBadRequest, "driverFirstName")
	e.do("GET", "/v2/drivers?sort=age", e.adminToken, nil).wantError(400, nameBadRequest, "sort")

	id := e.do("GET", "/v2/drivers?driverThirdPartyId=a", e.adminToken, nil).str("data.0.id")
	e.do("PATCH", q("/v2/drivers", e.org.ID), e.partnerToken, data(map[string]any{"id": id, "organizationId": e.org.ID, "lastName": "Zimmer", "driverCode": "13579"})).want(http.StatusNoContent)
	r = e.do("GET", "/v2/drivers?driverThirdPartyId=a", e.adminToken, nil).want(http.StatusOK)
	if r.str("data.0.lastName") != "Zimmer" || r.str("data.0.firstName") != "Zoe" || r.str("data.0.driverCode") != "13579" {
		t.Fatalf("patched %s", r.raw)
	}
	e.do("PATCH", "/v2/drivers", e.org2Token, data(map[string]any{"id": id, "lastName": "X"})).wantError(404, nameNotFound, "driver")
	e.do("PATCH", "/v2/drivers", e.adminToken, data(map[string]any{"lastName": "X"})).wantError(400, nameBadRequest, "data[0].id")
	e.do("DELETE", "/v2/drivers", e.adminToken, data(map[string]any{"id": id})).wantError(400, nameBadRequest, "deactivate")
	r = e.do("PUT", "/v2/drivers", e.adminToken, data(map[string]any{"id": id, "isActive": false})).want(http.StatusOK)
	if r.str("data.activeCount") != "0" || r.str("data.inactiveCount") != "1" || r.str("data.requestId") == "" {
		t.Fatalf("PUT answer %s", r.raw)
	}
	if n := e.do("GET", "/v2/drivers?driverIsActive=false", e.adminToken, nil).num("metadata.count"); n != 1 {
		t.Fatalf("%v inactive drivers, want 1", n)
	}
	e.do("DELETE", "/v2/drivers", e.viewerToken, data(map[string]any{"id": id})).wantError(403, nameForbidden)
	e.do("DELETE", "/v2/drivers", e.adminToken, data(map[string]any{"id": id})).want(http.StatusNoContent)
	if n := e.do("GET", "/v2/drivers", e.adminToken, nil).num("metadata.count"); n != 2 {
		t.Fatalf("%v drivers after delete, want 2", n)
	}
}

// decodeQR reads the text of the QR code in a PNG.
func decodeQR(t *testing.T, raw []byte) string {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	// The image is a generated, upright code: read it as such, as a
	// scanner's detector can misjudge the version of a few codes in a
	// thousand from their finder patterns alone.
	hints := map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_PURE_BARCODE: true}
	res, err := gozxingqr.NewQRCodeReader().Decode(bmp, hints)
	if err != nil {
		t.Fatalf("no QR code in the image: %v", err)
	}
	return res.GetText()
}

func TestDriverQRCode(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	created := e.do("POST", "/v2/drivers", e.adminToken, data(driverItem(0, "qr"))).want(http.StatusCreated)
	id := created.str("data.0.id")
	n, _ := strconv.ParseInt(id, 10, 64)
	var payload string
	e.fleetView(func(tx *store.Tx) error {
		d, err := tx.Driver(n)
		payload = d.QRPayload
		return err
	})
	// The driver object shows what its QR code encodes, in the documented form.
	if got := created.str("data.0.qrCode"); got != payload || !regexp.MustCompile(`^FCDRV1-[A-Z2-7]{24}$`).MatchString(got) {
		t.Fatalf("created driver's qrCode %q, want the payload %q as FCDRV1- and 24 base32 characters", got, payload)
	}
	if got := e.do("GET", "/v2/drivers", e.viewerToken, nil).want(http.StatusOK).str("data.0.qrCode"); got != payload {
		t.Fatalf("listed driver's qrCode %q, want %q", got, payload)
	}

	r := e.do("GET", "/v2/drivers/"+id+"/qr-code", e.viewerToken, nil).want(http.StatusOK)
	b64, found := strings.CutPrefix(r.str("data"), "data:image/png;base64,")
	if !found {
		t.Fatalf("data %.60q is not a PNG data URL", r.str("data"))
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	if got := decodeQR(t, raw); got != payload {
		t.Fatalf("QR code says %q, want the driver's payload %q", got, payload)
	}

	req, _ := http.NewRequest("GET", e.srv.URL+q("/v2/drivers/"+id+"/qr-code", e.org.ID), nil)
	req.Header.Set("Authorization", "Bearer "+e.partnerToken)
	req.Header.Set("Accept", "image/png")
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("image answer %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(body))
	if err != nil || cfg.Width != qrCodeSize {
		t.Fatalf("PNG config %+v %v", cfg, err)
	}
	if got := decodeQR(t, body); got != payload {
		t.Fatalf("raw QR code says %q", got)
	}
	e.do("GET", "/v2/drivers/"+id+"/qr-code", e.org2Token, nil).wantError(404, nameNotFound)
	e.do("GET", "/v2/drivers/"+id+"/qr-code", e.rivalToken, nil).wantError(404, nameNotFound)
	e.do("GET", "/v2/drivers/abc/qr-code", e.adminToken, nil).wantError(404, nameNotFound)
}

func TestDriverAssignmentsAndCheckout(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	e.do("POST", "/v2/drivers", e.adminToken, data(driverItem(0, "a"), driverItem(0, "b"))).want(http.StatusCreated)
	dev, dev2 := e.devices[0], e.devices[1]
	assign := func(token string, items ...map[string]any) *response {
		return e.do("POST", "/v2/drivers/devices", token, data(items...))
	}
	item := func(driver, imei string, org int64) map[string]any {
		m := map[string]any{"driverThirdPartyId": driver, "imei": imei}
		if org != 0 {
			m["organizationId"] = org
		}
		return m
	}
	assign(e.partnerToken, item("a", dev, 0)).wantError(400, nameBadRequest, "data[0].organizationId")
	r := assign(e.partnerToken, item("a", dev, e.org.ID)).want(http.StatusCreated)
	if r.str("data.0.imei") != dev || r.str("data.0.startTime") != isoTime(e.clock.Now()) {
		t.Fatalf("assignment %s", r.raw)
	}
	assign(e.adminToken, item("b", dev, 0)).wantError(409, nameConflict, dev)
	assign(e.adminToken, item("a", dev2, 0)).wantError(409, nameConflict, "already assigned")
	assign(e.adminToken, item("b", e.devices[3], 0)).wantError(404, nameNotFound, "device")
	assign(e.adminToken, item("b", e.rivalDevices[0], 0)).wantError(404, nameNotFound, "device")
	assign(e.adminToken, item("nobody", dev2, 0)).wantError(404, nameNotFound, "nobody")
	assign(e.viewerToken, item("b", dev2, 0)).wantError(403, nameForbidden)
	past := map[string]any{"driverThirdPartyId": "b", "imei": dev2, "startTime": "2026-02-01T08:00:00.000Z", "endTime": "2026-02-01T18:00:00Z"}
	assign(e.adminToken, past).want(http.StatusCreated)
	assign(e.adminToken, map[string]any{"driverThirdPartyId": "b", "imei": dev2, "startTime": "yesterday"}).wantError(400, nameBadRequest, "data[0].startTime")

	r = e.do("GET", "/v2/drivers?driverThirdPartyId=a", e.adminToken, nil)
	if r.str("data.0.imei") != dev {
		t.Fatalf("assigned driver's imei %q, want %s", r.str("data.0.imei"), dev)
	}
	e.fleetView(func(tx *store.Tx) error {
		creds, err := tx.DriverCredentials(dev)
		if err != nil || len(creds) != 1 {
			t.Errorf("credentials of the assigned device %+v %v, want only driver a", creds, err)
		}
		device2, err := tx.Device(dev2)
		if err != nil {
			return err
		}
		d, err := tx.CurrentDriver(device2, time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC))
		if err != nil || d == nil || d.ThirdPartyID != "b" {
			t.Errorf("retroactive assignment attributes %v %v", d, err)
		}
		return nil
	})
	e.clock.Advance(time.Hour)
	e.do("DELETE", "/v2/drivers/devices", e.adminToken, data(item("a", dev, 0))).want(http.StatusNoContent)
	e.do("DELETE", "/v2/drivers/devices", e.adminToken, data(item("a", dev, 0))).wantError(404, nameNotFound)

	// Check-out through the API after a check-in at the device.
	e.do("POST", "/v2/devices/"+dev+"/driver-checkout", e.adminToken, nil).wantError(404, nameNotFound, "checked-in driver")
	var pin string
	e.fleetUpdate(func(tx *store.Tx) error {
		d, err := tx.DriverByThirdPartyID(e.org.ID, "b")
		if err != nil {
			return err
		}
		pin = d.Code
		device, _ := tx.Device(dev)
		ts, err := tx.ApplyDriverEvent(device, store.EventInput{DeviceEventID: "c1", Type: "driverCheckIn", Time: e.clock.Now(), PinCode: pin})
		if len(ts) != 1 {
			t.Errorf("check-in transitions %+v", ts)
		}
		return err
	})
	e.do("POST", "/v2/devices/"+dev+"/driver-checkout", e.viewerToken, nil).wantError(403, nameForbidden)
	e.do("POST", "/v2/devices/"+dev+"/driver-checkout", e.rivalToken, nil).wantError(404, nameNotFound)
	r = e.do("POST", "/v2/devices/"+dev+"/driver-checkout", e.partnerToken, nil).want(http.StatusOK)
	if r.str("data.imei") != dev || r.get("data.deviceNotified") != true || r.str("data.checkedOutAt") == "" {
		t.Fatalf("check-out %s", r.raw)
	}
	queued, _, _ := e.cmd.snapshot()
	if len(queued) != 1 || queued[0] != dev+" "+protocol.CmdDriverCheckout {
		t.Fatalf("queued commands %v", queued)
	}
	e.fleetView(func(tx *store.Tx) error {
		evs, _, err := tx.DeviceEvents(dev, e.clock.Now().Add(-time.Minute), e.clock.Now(), store.Page{})
		if err != nil || len(evs) != 1 || evs[0].Type != "driverCheckOut" || evs[0].DriverID == 0 {
			t.Errorf("events after the API check-out %+v %v", evs, err)
		}
		return nil
	})
	e.do("POST", "/v2/devices/"+dev+"/driver-checkout", e.adminToken, nil).wantError(404, nameNotFound)
}
