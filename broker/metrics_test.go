package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// series counts the series of every metric family the broker registered.
func (e *env) series() map[string]int {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]int{}
	for _, mf := range mfs {
		out[mf.GetName()] = len(mf.GetMetric())
	}
	return out
}

// labelValues returns every label value of every series.
func (e *env) labelValues() []string {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				out = append(out, lp.GetValue())
			}
		}
	}
	return out
}

func TestDeviceCannotGrowMetrics(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	d, _ := e.bootstrap(id)
	// publish sends a message and waits for its PUBACK, which refuses
	// (0x80 and above) all but the first.
	publish := func(suffix string, payload []byte) {
		t.Helper()
		if pr, err := d.publish(suffix, payload); pr == nil {
			t.Fatalf("publish to %q: %v", suffix, err)
		}
	}
	// One message of each kind the device can send, a junk topic and a
	// junk payload: every series a device can reach exists now.
	publish(protocol.TopicStatus, []byte(`{"firmware":"3.12","state":"online"}`))
	publish(protocol.TopicGPS, []byte(`not json`))
	publish("up/ps", []byte(`{}`))
	before := e.series()

	junk := []string{"up/\ngp", "up/Gps", "up/gps/", "up/status/x", "up/ü", "up/" + id, "up/" + strings.Repeat("x", 300)}
	for i := range 150 {
		junk = append(junk, fmt.Sprintf("up/junk-%d", i))
	}
	for _, suffix := range junk {
		publish(suffix, []byte(`{"firmware":"3.12"}`))
	}
	for _, suffix := range []string{protocol.TopicEvent, protocol.TopicMedia, protocol.TopicReply, protocol.TopicConfigAck} {
		publish(suffix, []byte(`[`)) // invalid on a known topic
	}

	after := e.series()
	for name, n := range after {
		if grown := n - before[name]; grown > 0 && name != "fleetcam_mqtt_ingest_messages_total" {
			t.Errorf("%s grew by %d series from junk messages", name, grown)
		}
	}
	// The ingest counter has a series per known topic and result at most,
	// and one per result for every unknown topic together.
	if n, most := after["fleetcam_mqtt_ingest_messages_total"], (len(protocol.UpTopics())+1)*3; n > most {
		t.Errorf("fleetcam_mqtt_ingest_messages_total has %d series, want at most %d", n, most)
	}
	if got := e.metric("fleetcam_mqtt_ingest_messages_total", map[string]string{"topic": "unknown", "result": "invalid"}); got != float64(len(junk)+1) {
		t.Errorf("unknown/invalid = %v, want %d", got, len(junk)+1)
	}
	if got := e.metric("fleetcam_mqtt_ingest_messages_total", map[string]string{"topic": protocol.TopicEvent, "result": "invalid"}); got != 1 {
		t.Errorf("up/event/invalid = %v, want 1", got)
	}
	for _, v := range e.labelValues() {
		if v == id || strings.Contains(v, "junk") || !protocol.IsUpTopic(v) && strings.HasPrefix(v, "up/") {
			t.Errorf("label value %q comes from what the device sent", v)
		}
	}
}
