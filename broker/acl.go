package broker

import (
	"strings"

	"github.com/fleetcam/fleetcam/broker/mqttd"
	"github.com/fleetcam/fleetcam/broker/protocol"
)

// CanSubscribe allows a device filters that lie within its own down/
// branch. What a device may publish is checked by Publish (ingest.go).
func (h deviceHandler) CanSubscribe(c *mqttd.Conn, filter string) bool {
	l := h.s.links.byConn(c)
	return l != nil && topicAllowed(l.imei, filter, false)
}

// topicAllowed is the ACL rule. A filter is allowed for reading only when
// every topic it can match lies under the device's down/ branch, so a
// wildcard in the IMEI level or above is refused.
func topicAllowed(imei, topic string, write bool) bool {
	own := protocol.Prefix + "/" + imei + "/"
	rest, ok := strings.CutPrefix(topic, own)
	if !ok {
		return false
	}
	if write {
		suffix, ok := strings.CutPrefix(rest, "up/")
		return ok && suffix != "" && !strings.ContainsAny(rest, "+#")
	}
	suffix, ok := strings.CutPrefix(rest, "down/")
	return ok && suffix != ""
}
