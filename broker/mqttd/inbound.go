package mqttd

import (
	"errors"
	"strings"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// errClientDisconnect ends a connection whose client sent DISCONNECT.
var errClientDisconnect = errors.New("mqttd: client disconnected")

// handle acts on one packet from a connected client.
func (c *Conn) handle(fh packets.FixedHeader, body []byte) error {
	pk, err := decode(fh, c.version, body)
	if err != nil {
		return err
	}
	switch fh.Type {
	case packets.Publish:
		return c.onPublish(&pk)
	case packets.Puback:
		c.sess.acked(pk.PacketID)
		return nil
	case packets.Subscribe:
		return c.onSubscribe(&pk)
	case packets.Unsubscribe:
		return c.onUnsubscribe(&pk)
	case packets.Pingreq:
		return c.write(&packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingresp}})
	case packets.Disconnect:
		return c.onDisconnect(&pk)
	case packets.Pubrel:
		if c.version < 5 {
			// The end of the QoS 2 exchange of an MQTT 3.1.1 PUBLISH,
			// which was handled at its PUBREC (see onPublish).
			return c.write(&packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubcomp}, PacketID: pk.PacketID})
		}
		return nil
	case packets.Pubrec, packets.Pubcomp:
		// The server sends no QoS 2: there is no exchange to continue.
		return nil
	}
	return packets.ErrProtocolViolation
}

// onPublish hands a client's message to the Handler and acknowledges it.
func (c *Conn) onPublish(pk *packets.Packet) error {
	fh := pk.FixedHeader
	c.s.info.MessagesReceived.Add(1)
	if code := pk.PublishValidate(c.s.opts.TopicAliasMaximum); code != packets.CodeSuccess {
		return code
	}
	topic := pk.TopicName
	if alias := pk.Properties.TopicAlias; pk.Properties.TopicAliasFlag {
		if c.topicAliases == nil {
			c.topicAliases = make([]string, c.s.opts.TopicAliasMaximum)
		}
		if topic != "" {
			c.topicAliases[alias-1] = topic
		} else if topic = c.topicAliases[alias-1]; topic == "" {
			return packets.ErrTopicAliasInvalid
		}
	}
	pk.TopicName = topic
	code := packets.CodeSuccess
	if err := c.s.h.Publish(c, pk); err != nil {
		if !errors.As(err, &code) || code.Code < packets.ErrUnspecifiedError.Code {
			return packets.ErrImplementationSpecificError
		}
	}
	if fh.Qos == 0 {
		return nil
	}
	if c.version < 5 && code.Code >= packets.ErrUnspecifiedError.Code {
		if code.Code == packets.ErrNotAuthorized.Code {
			return code
		}
		code = packets.CodeSuccess
	}
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: pk.PacketID, ReasonCode: code.Code}
	if fh.Qos == 2 && c.version < 5 {
		// MQTT 3.1.1 announces no maximum QoS, so a client may publish at
		// QoS 2 and expects its exchange: PUBREC once the message is
		// handled, as a PUBACK would be, and PUBCOMP for its PUBREL. An
		// MQTT 5 client was told QoS 1 at most and gets a PUBACK.
		ack.FixedHeader.Type = packets.Pubrec
	}
	if code.Code >= packets.ErrUnspecifiedError.Code {
		ack.Properties.ReasonString = code.Reason
	}
	return c.write(&ack)
}

// sharePrefix starts a shared subscription's filter, which the server
// does not support.
const sharePrefix = "$share/"

// onSubscribe grants the filters the Handler allows, at QoS 1 at most.
func (c *Conn) onSubscribe(pk *packets.Packet) error {
	if code := pk.SubscribeValidate(); code != packets.CodeSuccess {
		return code
	}
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Suback}, PacketID: pk.PacketID,
		ReasonCodes: make([]byte, len(pk.Filters))}
	inUse := c.sess.inFlight(pk.PacketID)
	if inUse {
		ack.Properties.ReasonString = packets.ErrPacketIdentifierInUse.Reason
	}
	granted := false
	for i, sub := range pk.Filters {
		var code byte
		switch {
		case inUse:
			code = packets.ErrPacketIdentifierInUse.Code
		case !validFilter(sub.Filter):
			code = packets.ErrTopicFilterInvalid.Code
		case strings.HasPrefix(sub.Filter, sharePrefix):
			code = packets.ErrSharedSubscriptionsNotSupported.Code
		case !c.s.h.CanSubscribe(c, sub.Filter):
			code = packets.ErrNotAuthorized.Code
		case !c.sess.subscribe(sub.Filter, min(sub.Qos, 1)):
			code = packets.ErrQuotaExceeded.Code
		default:
			code = min(sub.Qos, 1)
			granted = true
		}
		if c.version < 5 && code >= packets.ErrUnspecifiedError.Code {
			code = 0x80 // MQTT 3.1.1 has a single failure code
		}
		ack.ReasonCodes[i] = code
	}
	if err := c.write(&ack); err != nil {
		return err
	}
	if granted {
		c.s.h.Subscribed(c)
	}
	return nil
}

// onUnsubscribe removes filters from the session.
func (c *Conn) onUnsubscribe(pk *packets.Packet) error {
	if code := pk.UnsubscribeValidate(); code != packets.CodeSuccess {
		return code
	}
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Unsuback}, PacketID: pk.PacketID,
		ReasonCodes: make([]byte, len(pk.Filters))}
	inUse := c.sess.inFlight(pk.PacketID)
	for i, sub := range pk.Filters {
		switch {
		case inUse:
			ack.ReasonCodes[i] = packets.ErrPacketIdentifierInUse.Code
		case c.sess.unsubscribe(sub.Filter):
			ack.ReasonCodes[i] = packets.CodeSuccess.Code
		default:
			ack.ReasonCodes[i] = packets.CodeNoSubscriptionExisted.Code
		}
	}
	return c.write(&ack)
}

// onDisconnect ends the connection at the client's request; an MQTT 5
// client may change its session expiry, but not from zero.
func (c *Conn) onDisconnect(pk *packets.Packet) error {
	if p := pk.Properties; p.SessionExpiryIntervalFlag {
		if c.expiry == 0 && p.SessionExpiryInterval > 0 {
			return packets.ErrProtocolViolationZeroNonZeroExpiry
		}
		c.expiry = min(time.Duration(p.SessionExpiryInterval)*time.Second, c.s.opts.MaxSessionExpiry)
	}
	return errClientDisconnect
}
