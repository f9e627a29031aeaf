package mqttd

import (
	"errors"
	"math"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// open handles the CONNECT: it validates and authenticates it, attaches
// the session, answers with a CONNACK and sends what the session holds.
func (c *Conn) open() bool {
	fh, body, err := c.next()
	if err == nil && fh.Type == packets.Connect {
		var pk packets.Packet
		if pk, err = decode(fh, 0, body); err == nil {
			return c.connect(&pk)
		}
	}
	if errors.Is(err, packets.ErrMalformedPacket) {
		c.warnMalformed(err)
	}
	return false
}

// connect acts on a well-formed CONNECT.
func (c *Conn) connect(pk *packets.Packet) bool {
	c.wmu.Lock() // Close, from any goroutine, reads it
	c.version = pk.ProtocolVersion
	c.wmu.Unlock()
	code := pk.ConnectValidate()
	switch {
	case code == packets.ErrProtocolViolationProtocolVersion, code == packets.CodeSuccess && c.version < 4:
		// MQTT 3.1 ("MQIsdp", level 3) included: 3.1.1 and 5 only.
		code = packets.ErrUnsupportedProtocolVersion
	case code != packets.CodeSuccess:
	case pk.Connect.WillFlag && pk.Connect.WillQos > 1:
		code = packets.ErrQosNotSupported
	case pk.Connect.WillRetain:
		code = packets.ErrRetainNotSupported
	}
	if code != packets.CodeSuccess {
		c.refuse(code)
		return false
	}
	c.id, c.keepalive = pk.Connect.ClientIdentifier, pk.Connect.Keepalive
	props := &pk.Properties
	if c.version == 5 {
		c.receiveMax, c.maxOut = props.ReceiveMaximum, props.MaximumPacketSize
		c.noProblems = props.RequestProblemInfoFlag && props.RequestProblemInfo == 0
	}
	if err := c.s.h.Connect(c, pk); err != nil {
		if !errors.As(err, &code) || code.Code < packets.ErrUnspecifiedError.Code {
			code = packets.ErrServerUnavailable
		}
		c.refuse(code)
		return false
	}
	c.admitted = true
	c.s.info.ClientsConnected.Add(1)

	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connack}}
	limit := c.s.opts.MaxSessionExpiry
	switch {
	case c.version < 5 && !pk.Connect.Clean:
		c.expiry = limit
	case c.version == 5 && props.SessionExpiryIntervalFlag:
		c.expiry = time.Duration(props.SessionExpiryInterval) * time.Second
		if props.SessionExpiryInterval == math.MaxUint32 || c.expiry > limit {
			c.expiry = limit
			ack.Properties.SessionExpiryInterval = uint32(limit / time.Second)
			ack.Properties.SessionExpiryIntervalFlag = true
		}
	}
	ss, present, err := c.s.attach(c, pk.Connect.Clean)
	if err != nil {
		c.s.opts.Log.Warn("mqtt session not attached", "client", c.id, "error", err)
		c.refuse(packets.ErrServerUnavailable)
		return false
	}
	c.sess = ss
	c.s.h.Online(c)

	ack.SessionPresent = present
	ack.Properties.ReceiveMaximum = uint16(c.s.opts.MaxInflight)
	ack.Properties.MaximumQos, ack.Properties.MaximumQosFlag = 1, true
	ack.Properties.RetainAvailable, ack.Properties.RetainAvailableFlag = 0, true
	ack.Properties.SharedSubAvailable, ack.Properties.SharedSubAvailableFlag = 0, true
	ack.Properties.SubIDAvailable, ack.Properties.SubIDAvailableFlag = 0, true
	ack.Properties.MaximumPacketSize = uint32(c.s.opts.MaxPacketSize)
	ack.Properties.TopicAliasMaximum = c.s.opts.TopicAliasMaximum
	if err := c.writeConnack(&ack); err != nil {
		return false
	}
	ss.resume(c)
	c.s.h.Ready(c)
	return true
}

// refuse answers a CONNECT with a refusing CONNACK; MQTT 3.1.1 clients get
// the return code that says the same.
func (c *Conn) refuse(code packets.Code) {
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connack}, ReasonCode: code.Code}
	if c.version < 5 {
		ack.ReasonCode = v3ReturnCode(code)
	} else {
		ack.Properties.ReasonString = code.Reason
	}
	_ = c.write(&ack)
}

// v3ReturnCode maps an MQTT 5 CONNACK reason code to MQTT 3.1.1's. It is
// not mochi's packets.V5CodesToV3, which answers bad credentials with 0x05
// (not authorized) where MQTT 3.1.1 and the device contract say 0x04, and
// leaves codes it does not list, such as 0x9F, unmapped.
func v3ReturnCode(code packets.Code) byte {
	switch code.Code {
	case packets.ErrUnsupportedProtocolVersion.Code:
		return 0x01
	case packets.ErrClientIdentifierNotValid.Code:
		return 0x02
	case packets.ErrBadUsernameOrPassword.Code, packets.ErrMalformedUsername.Code, packets.ErrMalformedPassword.Code:
		return 0x04
	case packets.ErrNotAuthorized.Code, packets.ErrBanned.Code:
		return 0x05
	}
	return 0x03 // server unavailable
}

// writeConnack writes a successful CONNACK, after which messages and a
// DISCONNECT may follow.
func (c *Conn) writeConnack(ack *packets.Packet) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	err := c.writeLocked(ack, c.s.opts.WriteTimeout)
	c.connacked = err == nil
	return err
}
