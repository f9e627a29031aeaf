package cloudapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricLabelsAreBounded: no request, authenticated or not, can add
// series beyond the closed sets of routes, methods and status codes.
func TestMetricLabelsAreBounded(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(_ *configs.Config, d *Deps) { d.Registry = reg })
	for i := range 200 {
		e.do(fmt.Sprintf("ZZZ%d", i), "/v2/me", "", nil)
		e.do("GET", fmt.Sprintf("/v2/junk/%d", i), "", nil)
		e.do(fmt.Sprintf("X%d", i), fmt.Sprintf("/v2/x%d", i), "", nil)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "fleetcam_http_") {
			continue
		}
		methods := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" {
					methods[l.GetValue()] = true
				}
			}
		}
		// newEnv's login, plus the junk: a GET and an "other" for the route
		// /v2/me (401, 405) and for unmatched routes (404).
		if n := len(f.GetMetric()); n > 6 {
			t.Errorf("%s has %d series after 600 junk requests", f.GetName(), n)
		}
		for m := range methods {
			if m != http.MethodGet && m != http.MethodPost && m != "other" {
				t.Errorf("%s has method label %q", f.GetName(), m)
			}
		}
	}
}
