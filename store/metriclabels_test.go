package store_test

import (
	"testing"

	. "github.com/fleetcam/fleetcam/store"
)

func TestMetricLabel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"trips":             "trips",
		"auditLogs":         "audit_logs",
		"webhookDeliveries": "webhook_deliveries",
		"systemMessages":    "system_messages",
		"adasImages":        "adas_images",
		"given_up":          "given_up",
		"":                  "",
	} {
		if got := MetricLabel(in); got != want {
			t.Errorf("MetricLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
