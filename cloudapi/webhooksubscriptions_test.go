package cloudapi

import (
	"fmt"
	"net/http"
	"testing"
)

func TestWebhookSubscriptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.addOrg(e.partnerID, "Fleet")
	dev := e.addDevice(org, 1)
	dev2 := e.addDevice(org, 2)
	otherPartner := e.addPartner("Other", "other@example.com", "Secret123")
	foreignDev := e.addDevice(e.addOrg(otherPartner, "Not yours"), 3)
	path := fmt.Sprintf("/v2/organizations/%d/webhooks", org)
	sub := func(imei, url, typ string, config map[string]any) map[string]any {
		m := map[string]any{"imei": imei, "url": url, "type": typ}
		if config != nil {
			m["config"] = config
		}
		return m
	}
	on := map[string]any{"isEnabled": true}

	r := e.do("POST", path, e.partnerToken, sub(dev, "https://a.example.com/sys", "systemMessages", map[string]any{"deviceRemoved": on})).want(http.StatusOK)
	id := r.id("webhookId")
	if id == 0 || r.id("data.id") != id || r.get("data.config.deviceRemoved.isEnabled") != true || r.str("data.webhookSecret") == "" {
		t.Fatalf("POST %s", r.raw)
	}
	// The same device, type and URL again updates the subscription.
	r = e.do("POST", path, e.partnerToken, sub(dev, "https://a.example.com/sys", "systemMessages", map[string]any{"privacyMode": on})).want(http.StatusOK)
	if r.id("webhookId") != id || r.get("data.config.privacyMode.isEnabled") != true || r.get("data.config.deviceRemoved.isEnabled") != false {
		t.Fatalf("second POST %s", r.raw)
	}
	if r.str("data.webhookSecret") != "" {
		t.Fatal("secret shown twice")
	}
	e.do("POST", path, e.partnerToken, sub(dev2, "https://a.example.com/gps", "gps", nil)).want(http.StatusOK)
	if n := len(e.do("GET", path, e.partnerToken, nil).want(http.StatusOK).list("data")); n != 2 {
		t.Fatalf("%d subscriptions, want 2", n)
	}
	if l := e.do("GET", path+"?imei="+dev2, e.partnerToken, nil).want(http.StatusOK).list("data"); len(l) != 1 {
		t.Fatalf("imei filter: %v", l)
	}

	for _, tc := range []struct {
		name   string
		body   any
		status int
		msg    string
	}{
		{"missing url", map[string]any{"imei": dev, "type": "gps"}, 400, "url is required"},
		{"unknown type", sub(dev, "https://a.example.com", "video", nil), 400, "type must be one of gps, event, alarms, systemMessages, activation"},
		{"config of another type", sub(dev, "https://a.example.com", "gps", map[string]any{"notifyMediaAvailable": on}), 400, "config.notifyMediaAvailable applies only to event webhooks"},
		{"private URL", sub(dev, "http://192.168.0.2/x", "event", nil), 400, "url must not point to"},
		{"device of another partner", sub(foreignDev, "https://a.example.com", "event", nil), 404, "device " + foreignDev},
		{"unknown device", sub("123", "https://a.example.com", "event", nil), 404, "device 123"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := map[int]string{400: nameBadRequest, 404: nameNotFound}[tc.status]
			e.do("POST", path, e.partnerToken, tc.body).wantError(tc.status, name, tc.msg)
		})
	}
	t.Run("three URLs per device and type", func(t *testing.T) {
		for i := range 2 {
			e.do("POST", path, e.partnerToken, sub(dev, fmt.Sprintf("https://h%d.example.com", i), "systemMessages", nil)).want(http.StatusOK)
		}
		e.do("POST", path, e.partnerToken, sub(dev, "https://h9.example.com", "systemMessages", nil)).
			wantError(http.StatusBadRequest, nameBadRequest, "at most 3 systemMessages webhooks")
	})

	// PUT replaces the whole list; an unchanged entry keeps its id.
	r = e.do("PUT", path, e.partnerToken, []any{
		sub(dev, "https://a.example.com/sys", "systemMessages", map[string]any{"deviceRemoved": on}),
		sub(dev, "https://a.example.com/ev", "event", map[string]any{"notifyMediaAvailable": map[string]any{"isEnabled": false}}),
	}).want(http.StatusOK)
	if l := r.list("data"); len(l) != 2 || r.id("data.0.id") != id || r.get("data.1.config.notifyMediaAvailable.isEnabled") != false {
		t.Fatalf("PUT %s", r.raw)
	}
	if l := e.do("GET", path, e.partnerToken, nil).want(http.StatusOK).list("data"); len(l) != 2 {
		t.Fatalf("after PUT %d subscriptions, want 2", len(l))
	}
	e.do("PUT", path, e.partnerToken, []any{sub(dev, "https://a.example.com", "event", nil), sub(dev, "https://a.example.com", "event", nil)}).
		wantError(http.StatusBadRequest, nameBadRequest, "[1] repeats")
	e.do("PUT", path, e.partnerToken, map[string]any{}).wantError(http.StatusBadRequest, nameBadRequest, "array")

	e.do("DELETE", fmt.Sprintf("%s/%d", path, id), e.partnerToken, nil).want(http.StatusOK)
	e.do("DELETE", fmt.Sprintf("%s/%d", path, id), e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound, "webhook")
	if l := e.do("GET", path, e.partnerToken, nil).want(http.StatusOK).list("data"); len(l) != 1 {
		t.Fatalf("after DELETE %d subscriptions, want 1", len(l))
	}
	e.do("GET", fmt.Sprintf("/v2/organizations/%d/webhooks", org+1), e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound)
}
