package broker

import (
	"crypto/tls"
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// metrics are the broker's Prometheus collectors, registered on the
// registry given to New. Names start with fleetcam_mqtt_ or fleetcam_store_.
// Every label value comes from a closed set the broker names: never from
// what a device sends (a topic, a client id), so that a device cannot add
// series.
type metrics struct {
	connects     *prometheus.CounterVec
	disconnects  prometheus.Counter
	bootstraps   prometheus.Counter
	ingest       *prometheus.CounterVec
	commands     *prometheus.CounterVec
	configPushes prometheus.Counter
	batchJobs    prometheus.Histogram
	batchSeconds prometheus.Histogram
	batchErrors  prometheus.Counter
	batchSplits  prometheus.Counter
	conflicts    *prometheus.CounterVec
	// tlsExpiry is nil without a TLS listener.
	tlsExpiry prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, s *Server) (*metrics, error) {
	m := &metrics{
		connects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetcam_mqtt_connects_total",
			Help: "Device connection attempts by result (accepted or the refusal)."}, []string{"result"}),
		disconnects: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetcam_mqtt_disconnects_total",
			Help: "Device connections that ended."}),
		bootstraps: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetcam_mqtt_bootstraps_total",
			Help: "Device tokens issued after a factory-key bootstrap."}),
		ingest: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetcam_mqtt_ingest_messages_total",
			Help: "Device messages by topic (an up/ topic the broker stores, else unknown) and result (stored, invalid, store_error)."}, []string{"topic", "result"}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetcam_mqtt_commands_total",
			Help: "Commands to devices by result."}, []string{"result"}),
		configPushes: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetcam_mqtt_config_pushes_total",
			Help: "Desired configurations published to devices."}),
		batchJobs: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fleetcam_store_commit_batch_jobs",
			Help: "Writes per group-commit transaction.", Buckets: prometheus.ExponentialBuckets(1, 2, 12)}),
		batchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fleetcam_store_commit_seconds",
			Help: "Time to commit one group-commit batch.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		batchErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetcam_store_commit_errors_total",
			Help: "Group-commit transactions that failed as a whole."}),
		batchSplits: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetcam_store_commit_splits_total",
			Help: "Group-commit transactions split in two after losing serialisation conflicts to other writers (the nodes of a cluster)."}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetcam_store_commit_conflicts_total",
			Help: "Device messages whose commit lost a transaction conflict to another writer, by result: retried (committed again after a pause) or expired (the message had waited as long as it may: the device is disconnected unacknowledged and sends it again)."}, []string{"result"}),
	}
	for _, result := range []string{"retried", "expired"} {
		m.conflicts.WithLabelValues(result)
	}
	info := s.mqtt.Info()
	gauge := func(name, help string, v *atomic.Int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return float64(v.Load()) })
	}
	counter := func(name, help string, v *atomic.Int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(v.Load()) })
	}
	collectors := []prometheus.Collector{
		m.connects, m.disconnects, m.bootstraps, m.ingest, m.commands, m.configPushes,
		m.batchJobs, m.batchSeconds, m.batchErrors, m.batchSplits, m.conflicts,
		gauge("fleetcam_mqtt_clients_connected", "Clients connected to the broker.", &info.ClientsConnected),
		gauge("fleetcam_mqtt_inflight_messages", "QoS 1 messages awaiting acknowledgement.", &info.Inflight),
		gauge("fleetcam_mqtt_subscriptions", "Active subscriptions.", &info.Subscriptions),
		counter("fleetcam_mqtt_connection_panics_total", "Connections closed because their packet handling panicked.", &info.Panics),
		counter("fleetcam_mqtt_messages_dropped_total", "Messages to devices dropped because a session held too many or a device could not take one.", &info.MessagesDropped),
		counter("fleetcam_mqtt_messages_received_total", "PUBLISH packets received.", &info.MessagesReceived),
		counter("fleetcam_mqtt_messages_sent_total", "PUBLISH packets sent.", &info.MessagesSent),
		counter("fleetcam_mqtt_bytes_received_total", "Bytes received from clients.", &info.BytesReceived),
		counter("fleetcam_mqtt_bytes_sent_total", "Bytes sent to clients.", &info.BytesSent),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fleetcam_mqtt_sessions",
			Help: "Device sessions the broker holds, connected or not."}, func() float64 { return float64(s.mqtt.Sessions()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fleetcam_mqtt_devices_online",
			Help: "Devices with an authenticated connection."}, func() float64 { return float64(s.links.online()) }),
	}
	if s.cfg.TLSAddr != "" {
		m.tlsExpiry = prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetcam_mqtt_tls_certificate_expiry_timestamp_seconds",
			Help: "Unix time the certificate the MQTT TLS listener serves expires; only with a TLS listener."})
		collectors = append(collectors, m.tlsExpiry)
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("broker: register metrics: %w", err)
		}
	}
	return m, nil
}

// servesCertificate records the expiry of the certificate the TLS listener serves.
func (m *metrics) servesCertificate(cert tls.Certificate) {
	if m.tlsExpiry != nil && cert.Leaf != nil {
		m.tlsExpiry.Set(float64(cert.Leaf.NotAfter.Unix()))
	}
}

// unknownTopic is the topic label of a message to a topic the broker does not know.
const unknownTopic = "unknown"

// topicLabel is the topic label of a device message to topic suffix, in
// fleetcam_mqtt_ingest_messages_total: an up/ topic the broker stores, or
// unknownTopic.
func topicLabel(suffix string) string {
	if protocol.IsUpTopic(suffix) {
		return suffix
	}
	return unknownTopic
}

func (m *metrics) observeBatch(b store.BatchStats) {
	m.batchJobs.Observe(float64(b.Jobs))
	m.batchSeconds.Observe(b.Took.Seconds())
	if b.Err != nil {
		m.batchErrors.Inc()
	}
	m.batchSplits.Add(float64(b.Splits))
}
