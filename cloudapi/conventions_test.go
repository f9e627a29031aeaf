package cloudapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// TestRequestIDEverywhere: every answer, success or error, carries the
// request id in the X-Request-Id header and, for JSON, in the body.
func TestRequestIDEverywhere(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	tests := []struct {
		name, method, path, token string
		body                      any
		status                    int
	}{
		{"data call", "GET", "/v2/organizations", e.partnerToken, nil, 200},
		{"write", "POST", orgPath(org.id, "/groups"), e.partnerToken, map[string]any{"name": "G"}, 200},
		{"validation error", "POST", orgPath(org.id, "/groups"), e.partnerToken, map[string]any{"name": 1}, 400},
		{"no token", "GET", "/v2/organizations", "", nil, 401},
		{"not found", "GET", "/v2/devices/" + testIMEI(1), e.partnerToken, nil, 404},
		{"unknown route", "GET", "/v2/nowhere", e.partnerToken, nil, 404},
		{"wrong method", "PUT", "/v2/organizations", e.partnerToken, nil, 405},
		{"health", "GET", "/healthz", "", nil, 200},
		{"readiness", "GET", "/readyz", "", nil, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.token, tc.body).want(tc.status)
			id := r.header.Get("X-Request-Id")
			if len(id) != 36 || r.str("requestId") != id {
				t.Fatalf("request id header %q body %q: %s", id, r.str("requestId"), r.raw)
			}
			if tc.status >= 400 && (r.str("error") == "" || r.str("message") == "") {
				t.Fatalf("error body %s", r.raw)
			}
		})
	}
	if a, b := e.do("GET", "/healthz", "", nil), e.do("GET", "/healthz", "", nil); a.str("requestId") == b.str("requestId") {
		t.Fatal("two requests share a request id")
	}
}

// TestHeadAndWrongMethods: HEAD answers as GET does, without a body; a
// method a route does not take is 405 MethodNotAllowedError naming it, with
// the route's methods in Allow.
func TestHeadAndWrongMethods(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		path, token string
		status      int
	}{
		{"/healthz", "", http.StatusOK},
		{"/v2/openapi.json", "", http.StatusOK},
		{"/v2/organizations", e.partnerToken, http.StatusOK},
		{"/v2/organizations", "", http.StatusUnauthorized},
		{"/v2/nowhere", e.partnerToken, http.StatusNotFound},
	} {
		get := e.do("GET", tc.path, tc.token, nil).want(tc.status)
		head := e.do("HEAD", tc.path, tc.token, nil).want(tc.status)
		if len(head.raw) != 0 || head.header.Get("Content-Type") != get.header.Get("Content-Type") || head.header.Get("X-Request-Id") == "" {
			t.Errorf("HEAD %s: %d bytes of body, headers %v; GET's Content-Type %q", tc.path, len(head.raw), head.header, get.header.Get("Content-Type"))
		}
	}
	for _, tc := range []struct {
		method, path, allow string
	}{
		{"PUT", "/v2/organizations", "GET, POST, HEAD"},
		{"PROPFIND", "/v2/organizations", "GET, POST, HEAD"},
		{"TRACE", "/healthz", "GET, HEAD"},
		{"HEAD", "/v2/authenticate", "POST"},
	} {
		r := e.do(tc.method, tc.path, e.partnerToken, nil)
		if tc.method == "HEAD" {
			if r.status != http.StatusMethodNotAllowed || len(r.raw) != 0 || r.header.Get("Allow") != tc.allow {
				t.Errorf("HEAD %s: %d, Allow %q, %d bytes", tc.path, r.status, r.header.Get("Allow"), len(r.raw))
			}
			continue
		}
		r.wantError(http.StatusMethodNotAllowed, nameMethodNotAllowed, "method "+tc.method, tc.path)
		if got := r.header.Get("Allow"); got != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
}

func TestReadyz(t *testing.T) {
	t.Parallel()
	ready := false
	e := newEnv(t, func(_ *configs.Config, d *Deps) { d.Ready = func() bool { return ready } })
	e.do("GET", "/readyz", "", nil).want(http.StatusServiceUnavailable)
	e.do("GET", "/healthz", "", nil).want(http.StatusOK)
	ready = true
	e.do("GET", "/readyz", "", nil).want(http.StatusOK)
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *configs.Config, _ *Deps) { c.HTTP.MaxBodyBytes = 1024 })
	big := `{"name":"` + strings.Repeat("x", 4096) + `"}`
	e.do("POST", "/v2/organizations", e.partnerToken, big).wantError(http.StatusRequestEntityTooLarge, nameTooLarge, "1024 bytes")
	e.do("POST", "/v2/organizations", e.partnerToken, map[string]any{"name": "small"}).want(http.StatusOK)
}

// limited serves e's API beside e's own server with the call limit limit
// (newEnv's leaves its sign-in room on a loaded machine) and returns a
// request to it.
func (e *testEnv) limited(limit time.Duration, method, path string) *http.Request {
	e.t.Helper()
	srv := httptest.NewServer(e.api.handler(limit))
	e.t.Cleanup(srv.Close)
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.partnerToken)
	return req
}

// TestCallTimeout: a call still running at the limit is answered with a JSON
// TimeoutError, not a dropped connection.
func TestCallTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	release := make(chan struct{})
	defer close(release)
	e.api.engine.GET("/v2/test/slow", e.api.authenticate, func(c *gin.Context) {
		select {
		case <-c.Request.Context().Done():
		case <-release:
		}
		ok(c, "too late")
	})
	// The slow handler outlasts any limit.
	r := e.send(e.limited(200*time.Millisecond, "GET", "/v2/test/slow")).
		wantError(http.StatusServiceUnavailable, nameTimeout, "did not complete within 200ms", "limit and offset")
	if r.header.Get("X-Request-Id") != r.str("requestId") || strings.Contains(string(r.raw), "too late") {
		t.Fatalf("timeout answer %s", r.raw)
	}
	metrics := e.do("GET", "/metrics", "", nil).want(http.StatusOK)
	if !strings.Contains(string(metrics.raw), "fleetcam_http_timeouts_total 1") {
		t.Fatalf("timeouts not counted:\n%s", metrics.raw)
	}
	// Calls within the limit are unaffected.
	e.do("GET", "/v2/me", e.partnerToken, nil).want(http.StatusOK)
}

// TestTimedOutWriteIsNotCommitted: a write still running when the call is
// answered with a TimeoutError leaves nothing in the store, although its
// handler carries on and returns without an error of its own.
func TestTimedOutWriteIsNotCommitted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	type outcome struct {
		wrote bool  // the organization was written before the limit
		err   error // what the write returned
	}
	finished := make(chan outcome, 1)
	e.api.engine.POST("/v2/test/slow-write", e.api.authenticate, func(c *gin.Context) {
		var wrote bool
		err := e.api.update(c, func(tx *store.Tx) error {
			if _, err := tx.CreateOrganization(principal(c).PartnerID, c.Query("name"), []byte("salt")); err != nil {
				return err
			}
			wrote = c.Request.Context().Err() == nil
			<-c.Request.Context().Done() // the handler outlives the call
			return nil
		})
		finished <- outcome{wrote, err}
		ok(c, "too late")
	})
	// The write must be made before the limit for the test to mean
	// anything: a machine too busy to make it in time gets twice as long.
	for limit := 500 * time.Millisecond; ; limit *= 2 {
		name := "Written too late within " + limit.String()
		e.send(e.limited(limit, "POST", "/v2/test/slow-write?name="+url.QueryEscape(name))).
			wantError(http.StatusServiceUnavailable, nameTimeout, "did not complete within "+limit.String())
		var got outcome
		select {
		case got = <-finished:
		case <-time.After(2 * time.Minute):
			t.Fatal("the handler did not finish")
		}
		if !errors.Is(got.err, context.DeadlineExceeded) {
			t.Fatalf("the late write returned %v, want the call's deadline", got.err)
		}
		r := e.do("GET", "/v2/organizations", e.partnerToken, nil).want(http.StatusOK)
		if strings.Contains(string(r.raw), name) {
			t.Fatalf("the timed-out write was committed: %s", r.raw)
		}
		if got.wrote {
			return
		}
		if limit > time.Minute {
			t.Fatalf("the write was not made within %s", limit)
		}
		t.Logf("the write was not made within %s; again with twice as long", limit)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("GET", "/v2/me", e.partnerToken, nil).want(http.StatusOK)
	e.do("GET", "/v2/me", "", nil).want(http.StatusUnauthorized)
	e.do("GET", "/v2/nowhere", "", nil).want(http.StatusNotFound)
	r := e.do("GET", "/metrics", "", nil).want(http.StatusOK)
	body := string(r.raw)
	for _, want := range []string{
		`fleetcam_http_requests_total{method="GET",route="/v2/me",status="200"} 1`,
		`fleetcam_http_requests_total{method="GET",route="/v2/me",status="401"} 1`,
		`fleetcam_http_requests_total{method="POST",route="/v2/authenticate",status="200"} 1`,
		`fleetcam_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`fleetcam_http_request_duration_seconds_bucket{method="GET",route="/v2/me",status="200",le="30"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestMetricsLabelledByRegisterer: with a Registerer that adds constant
// labels (a cluster node's "node"), every series /metrics serves carries
// them, the handler's own error counts included.
func TestMetricsLabelledByRegisterer(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(_ *configs.Config, d *Deps) {
		d.Registry, d.Registerer = reg, prometheus.WrapRegistererWith(prometheus.Labels{"node": "node-b"}, reg)
	})
	e.do("GET", "/v2/me", e.partnerToken, nil).want(http.StatusOK)
	body := string(e.do("GET", "/metrics", "", nil).want(http.StatusOK).raw)
	if !strings.Contains(body, "\npromhttp_metric_handler_errors_total{") {
		t.Fatalf("metrics lack the handler's error counts:\n%s", body)
	}
	for line := range strings.SplitSeq(body, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") && !strings.Contains(line, `node="node-b"`) {
			t.Errorf("a series without the node label: %s", line)
		}
	}
}

// TestAccessRules: viewers cannot write, non-partners cannot call
// partner-only operations, and another partner's organization or device is 404.
func TestAccessRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	imei := e.newDevice(e.partnerToken, org.id, testIMEI(1), "Truck")
	viewer := e.orgUser(org.id, "v@acme.example", store.AccessViewer)
	editor := e.orgUser(org.id, "e@acme.example", store.AccessEditor)
	_, tokB := e.newPartner("Partner B", "b@other.example")
	tests := []struct {
		name, method, path, token string
		body                      any
		status                    int
	}{
		{"viewer adds a device", "POST", orgPath(org.id, "/devices"), viewer, map[string]any{"imei": testIMEI(2), "name": "x"}, 403},
		{"viewer renames a device", "PATCH", "/v2/devices/" + imei, viewer, map[string]any{"name": "x"}, 403},
		{"viewer creates a group", "POST", orgPath(org.id, "/groups"), viewer, map[string]any{"name": "x"}, 403},
		{"viewer removes a device", "DELETE", orgPath(org.id, "/devices/"+imei), viewer, nil, 403},
		{"viewer reads", "GET", "/v2/devices/" + imei, viewer, nil, 200},
		{"organization user creates an organization", "POST", "/v2/organizations", editor, map[string]any{"name": "x"}, 403},
		{"organization user lists partner devices", "GET", "/v2/partner-devices", editor, nil, 403},
		{"organization user adds a contact", "POST", "/v2/partners/1/contacts", editor, map[string]any{"email": "x@y.example"}, 403},
		{"other partner reads the organization", "GET", orgPath(org.id, ""), tokB, nil, 404},
		{"other partner lists its devices", "GET", orgPath(org.id, "/devices"), tokB, nil, 404},
		{"other partner reads the device", "GET", "/v2/devices/" + imei, tokB, nil, 404},
		{"other partner renames the device", "PATCH", "/v2/devices/" + imei, tokB, map[string]any{"name": "x"}, 404},
		{"other partner reads the users", "GET", orgPath(org.id, "/users"), tokB, nil, 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.token, tc.body)
			if tc.status == 200 {
				r.want(200)
				return
			}
			r.wantError(tc.status, errorName(tc.status))
		})
	}
}
