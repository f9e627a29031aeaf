package webhooks

import (
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/fleetcam/fleetcam/store"
)

// metric returns the value of the series name with labels, or -1.
func (e *env) metric(name string, labels map[string]string) float64 {
	e.t.Helper()
	families, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue series
				}
			}
			return value(m)
		}
	}
	return -1
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}

func TestMetrics(t *testing.T) {
	e := newEnv(t)
	ok := newReceiver(t, nil)
	failing := newReceiver(t, func(int, received, http.ResponseWriter) int { return http.StatusInternalServerError })
	e.settings(func(s *store.WebhookSettings) {
		s.EventURLs = []string{ok.url("/")}
		s.GPSURLs = []string{failing.url("/")}
		s.SystemMessages = []store.SystemMessagesWebhook{{URL: ok.url("/system"), Config: store.SystemMessagesConfig{DeviceRemoved: true}}}
	})
	e.event(devX, 1, "accident")
	e.emit(store.MessageGPS, "", devX, map[string]any{"id": "g1"})
	e.emit(store.MessageSystem, store.SystemDeviceRemoved, devX, map[string]any{"serialNumber": devX})
	e.attempted(3)
	e.clock.Advance(90 * time.Second)

	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"fleetcam_webhook_deliveries_total", map[string]string{"type": "event", "outcome": "delivered"}, 1},
		{"fleetcam_webhook_attempts_total", map[string]string{"type": "event", "result": "success"}, 1},
		{"fleetcam_webhook_attempts_total", map[string]string{"type": "gps", "result": "http_error"}, 1},
		{"fleetcam_webhook_first_attempt_latency_seconds", map[string]string{"type": "event"}, 1},
		{"fleetcam_webhook_queue_depth", nil, 1},
		{"fleetcam_webhook_oldest_pending_age_seconds", nil, 90},
		{"fleetcam_webhook_queued_total", map[string]string{"type": "gps"}, 1},
		// Label values are snake_case, as in every fleetcam metric.
		{"fleetcam_webhook_deliveries_total", map[string]string{"type": "system_messages", "outcome": "delivered"}, 1},
		{"fleetcam_webhook_queued_total", map[string]string{"type": "system_messages"}, 1},
		{"fleetcam_webhook_attempts_total", map[string]string{"type": "system_messages", "result": "success"}, 1},
		{"fleetcam_webhook_first_attempt_latency_seconds", map[string]string{"type": "system_messages"}, 1},
	}
	for _, c := range checks {
		if got := e.metric(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}
