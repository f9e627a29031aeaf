package webhooks

import "github.com/prometheus/client_golang/prometheus"

// Delivery outcomes, the outcome label of fleetcam_webhook_deliveries_total.
const (
	outcomeDelivered = "delivered"
	outcomeGivenUp   = "given_up"
	outcomeDisabled  = "endpoint_disabled"
)

// metrics are the dispatcher's Prometheus collectors.
type metrics struct {
	deliveries *prometheus.CounterVec
	attempts   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	queueDepth prometheus.Gauge
	fannedOut  *prometheus.CounterVec
	pruned     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, oldestPending func() float64) *metrics {
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetcam", Subsystem: "webhook", Name: "deliveries_total",
			Help: "Finished webhook deliveries by webhook type and outcome (delivered, given_up, endpoint_disabled).",
		}, []string{"type", "outcome"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetcam", Subsystem: "webhook", Name: "attempts_total",
			Help: "Webhook delivery attempts by webhook type and result (success, http_error, network_error).",
		}, []string{"type", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "fleetcam", Subsystem: "webhook", Name: "first_attempt_latency_seconds",
			Help:    "Time from a message (event, GPS batch, …) to the first attempt to deliver it, by webhook type.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800},
		}, []string{"type"}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "fleetcam", Subsystem: "webhook", Name: "queue_depth",
			Help: "Webhook deliveries waiting to be delivered.",
		}),
		fannedOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetcam", Subsystem: "webhook", Name: "queued_total",
			Help: "Webhook deliveries queued, by webhook type.",
		}, []string{"type"}),
		pruned: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "fleetcam", Subsystem: "webhook", Name: "messages_pruned_total",
			Help: "Outbox messages deleted once the stored cursor had passed them.",
		}),
	}
	oldest := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "fleetcam", Subsystem: "webhook", Name: "oldest_pending_age_seconds",
		Help: "Age of the oldest webhook delivery still waiting; 0 when none waits.",
	}, oldestPending)
	reg.MustRegister(m.deliveries, m.attempts, m.latency, m.queueDepth, m.fannedOut, m.pruned, oldest)
	return m
}
