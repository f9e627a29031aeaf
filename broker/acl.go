package broker

import (
	"strings"

	mqtt "github.com/mochi-mqtt/server/v2"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// aclHook confines each device to its own topics: it publishes only under
// Prefix/<imei>/up/ and subscribes only under Prefix/<imei>/down/. Inline
// (cloud) publishes bypass ACL checks in mochi.
type aclHook struct {
	mqtt.HookBase
	s *Server
}

// ID names the hook.
func (h *aclHook) ID() string { return "fleetcam-acl" }

// Provides lists the events the hook handles.
func (h *aclHook) Provides(b byte) bool { return b == mqtt.OnACLCheck }

// OnACLCheck allows a device's own up topics for writing and its own down
// topics (or filters within them) for reading.
func (h *aclHook) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool {
	if cl.Net.Inline {
		return true
	}
	l := h.s.links.byClient(cl)
	if l == nil {
		return false
	}
	return topicAllowed(l.imei, topic, write)
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
