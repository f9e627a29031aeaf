package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// inventory is an organization's device list as the API answers adds to
// it: 200 for a new IMEI, 409 for one registered before, 401 without the
// token.
type inventory struct {
	mu    sync.Mutex
	imeis map[string]string // IMEI → name
}

func (inv *inventory) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v2/organizations/7/devices" {
		http.Error(w, `{"error":"NotFoundError","message":"route not found"}`, http.StatusNotFound)
		return
	}
	if r.Header.Get("Authorization") != "Bearer tok" {
		http.Error(w, `{"error":"UnauthorizedError","message":"the token is not valid"}`, http.StatusUnauthorized)
		return
	}
	var d struct{ IMEI, Name string }
	json.NewDecoder(r.Body).Decode(&d)
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if _, there := inv.imeis[d.IMEI]; there {
		w.WriteHeader(http.StatusConflict)
		return
	}
	inv.imeis[d.IMEI] = d.Name
	w.Write([]byte(`{"data":{}}`))
}

// -add-to adds every device to the organization before the run; a second
// run finds them registered and goes on.
func TestAddToAddsTheDevicesOnce(t *testing.T) {
	inv := &inventory{imeis: map[string]string{}}
	srv := httptest.NewServer(inv)
	defer srv.Close()
	url := srv.URL + "/v2/organizations/7/devices"
	imeis := []string{"356938100000000", "356938100000018", "356938100000026"}
	var out bytes.Buffer
	if err := addToInventory(context.Background(), url, "tok", imeis, &out); err != nil {
		t.Fatal(err)
	}
	if len(inv.imeis) != 3 || inv.imeis["356938100000018"] != "Simulated 356938100000018" {
		t.Fatalf("inventory %v, want the three devices", inv.imeis)
	}
	if !strings.Contains(out.String(), "added 3 device(s)") {
		t.Fatalf("printed %q", out.String())
	}
	out.Reset()
	if err := addToInventory(context.Background(), url, "tok", imeis, &out); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if !strings.Contains(out.String(), "added 0 device(s) to "+url+", 3 already registered") {
		t.Fatalf("second run printed %q", out.String())
	}
}

// -add-to without a token says where the token goes; an API refusal ends
// the run with the API's message.
func TestAddToRefusals(t *testing.T) {
	srv := httptest.NewServer(&inventory{imeis: map[string]string{}})
	defer srv.Close()
	imeis := []string{"356938100000000"}
	if err := addToInventory(context.Background(), srv.URL+"/v2/organizations/7/devices", "", imeis, &bytes.Buffer{}); err == nil ||
		!strings.Contains(err.Error(), "FLEETCAM_TOKEN") {
		t.Fatalf("no token: %v", err)
	}
	if err := addToInventory(context.Background(), srv.URL+"/v2/organizations/7/devices", "expired", imeis, &bytes.Buffer{}); err == nil ||
		!strings.Contains(err.Error(), "401 the token is not valid") {
		t.Fatalf("bad token: %v", err)
	}
	t.Setenv(tokenEnv, "tok")
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"-add-to", srv.URL + "/v2/organizations/8/devices", "-state-dir", ""}, &bytes.Buffer{}, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "404 route not found") {
		t.Fatalf("wrong organization: exit %d, %q", code, stderr.String())
	}
}
