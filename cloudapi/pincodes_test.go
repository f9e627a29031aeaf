package cloudapi

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

var sixDigits = regexp.MustCompile(`^[0-9]{6}$`)

func TestDevicePinCodes(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 2)
	imei := w.imeis[0]
	pw := map[string]any{"password": "Secret123"}
	r := w.do("POST", devPath(imei, "/pin-codes"), w.editor, pw).want(http.StatusOK)
	admin, driver := r.str("data.adminPin.value"), r.str("data.driverPin.value")
	if !sixDigits.MatchString(admin) || !sixDigits.MatchString(driver) {
		t.Fatalf("PINs %q %q", admin, driver)
	}
	ds, e := w.settings(imei)
	pins := protocolPins(e.Control.PinCodes)
	if !pins.Matches(true, admin) || !pins.Matches(false, driver) || pins.Matches(true, driver) {
		t.Fatal("the stored hashes do not verify the issued PINs")
	}
	stored, _ := json.Marshal(ds)
	if strings.Contains(string(stored), `"`+admin+`"`) || strings.Contains(string(stored), `"`+driver+`"`) {
		t.Fatalf("a PIN is stored in clear: %s", stored)
	}
	for _, a := range w.audit("device.pinCodes") {
		if strings.Contains(string(a.After)+string(a.Before), `"`+admin+`"`) {
			t.Fatal("a PIN is in the audit log")
		}
	}
	if _, _, pushed := w.cmd.take(); !slices.Contains(pushed, imei) {
		t.Fatal("the PIN hashes were not pushed")
	}
	again := w.do("POST", devPath(imei, "/pin-codes"), w.editor, pw).want(http.StatusOK)
	if _, e := w.settings(imei); protocolPins(e.Control.PinCodes).Matches(true, admin) && again.str("data.adminPin.value") != admin {
		t.Fatal("the earlier admin PIN still verifies after new PINs were issued")
	}
	w.do("POST", devPath(imei, "/pin-codes"), w.editor, map[string]any{"password": "Wrong123"}).wantError(http.StatusForbidden, nameForbidden, "password")
	w.do("POST", devPath(imei, "/pin-codes"), w.editor, map[string]any{}).wantError(http.StatusBadRequest, nameBadRequest, "password")
	w.do("POST", devPath(imei, "/pin-codes"), w.viewer, pw).wantError(http.StatusForbidden, nameForbidden)
	w.do("POST", devPath(w.otherIMEI, "/pin-codes"), w.editor, pw).wantError(http.StatusNotFound, nameNotFound)
}

func TestOrganizationPinCodes(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 2)
	own, inherits := w.imeis[0], w.imeis[1]
	pw := map[string]any{"password": "Secret123"}
	mine := w.do("POST", devPath(own, "/pin-codes"), w.editor, pw).want(http.StatusOK)
	r := w.do("POST", orgPath(w.orgID, "/default-settings/pin-codes"), w.partnerToken, pw).want(http.StatusOK)
	admin := r.str("data.adminPin.value")
	if !sixDigits.MatchString(admin) {
		t.Fatalf("answer %s", r.raw)
	}
	if _, e := w.settings(inherits); !protocolPins(e.Control.PinCodes).Matches(true, admin) {
		t.Fatal("a device without PINs of its own does not take the organization's")
	}
	if _, e := w.settings(own); !protocolPins(e.Control.PinCodes).Matches(true, mine.str("data.adminPin.value")) {
		t.Fatal("a device's own PINs gave way to the organization's without the organization profile")
	}
	if a := w.audit("organization.pinCodes"); len(a) != 1 {
		t.Fatalf("audit %+v", a)
	}
	w.setProfile(true)
	r = w.do("POST", orgPath(w.orgID, "/default-settings/pin-codes"), w.editor, pw).want(http.StatusOK)
	if _, e := w.settings(own); !protocolPins(e.Control.PinCodes).Matches(false, r.str("data.driverPin.value")) {
		t.Fatal("with the organization profile every device takes the organization's PINs")
	}
	w.do("POST", orgPath(w.orgID, "/default-settings/pin-codes"), w.viewer, pw).wantError(http.StatusForbidden, nameForbidden)
	w.do("POST", orgPath(w.otherOrgID, "/default-settings/pin-codes"), w.partnerToken, pw).wantError(http.StatusNotFound, nameNotFound)
	w.do("POST", orgPath(w.orgID, "/default-settings/pin-codes"), w.partnerToken, map[string]any{"password": "nope"}).
		wantError(http.StatusForbidden, nameForbidden, "password")
	var os *store.OrgSettings
	w.db.View(t.Context(), func(tx *store.Tx) (err error) { os, err = tx.OrgSettings(w.orgID); return err })
	if os.Control == nil || os.Control.PinCodes == nil || os.Control.PinCodes.AdminPinHash == "" {
		t.Fatalf("organization control %+v", os.Control)
	}
}
