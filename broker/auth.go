package broker

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/mqttd"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// refusal is a CONNACK answer: the MQTT 5 reason code (the MQTT server
// sends an MQTT 3.1.1 device the return code that says the same) and the
// result label of fleetcam_mqtt_connects_total.
type refusal struct {
	code   packets.Code
	metric string
}

// CONNACK refusals (docs/device-protocol.md, "Reason codes").
var (
	refuseClientID      = refusal{packets.ErrClientIdentifierNotValid, "bad_client_id"}
	refuseCredentials   = refusal{packets.ErrBadUsernameOrPassword, "bad_credentials"}
	refuseNotAuthorized = refusal{packets.ErrNotAuthorized, "not_authorized"}
	refuseUnavailable   = refusal{packets.ErrServerUnavailable, "server_unavailable"}
	refuseRate          = refusal{packets.ErrConnectionRateExceeded, "rate_limited"}
)

// Connect checks the rate limit and the device's credentials, refusing the
// connection with its reason code when they fail.
func (h deviceHandler) Connect(c *mqttd.Conn, pk *packets.Packet) error {
	s := h.s
	if !s.limiter.allow(c.Remote(), s.now()) {
		return s.refuse(c, refuseRate, "connection rate exceeded")
	}
	l, ref, why := s.authenticate(c, pk)
	if l == nil {
		return s.refuse(c, ref, why)
	}
	s.links.admit(l)
	return nil
}

// refuse counts and logs a refusal and returns its code, with which the
// MQTT server answers the CONNECT. The reason (why) becomes the CONNACK's
// MQTT 5 Reason String unless the device asked for no problem information:
// it names the cause in terms the device already knows (its IMEI, its
// credential, its clock) and never a stored secret.
func (s *Server) refuse(c *mqttd.Conn, r refusal, why string) error {
	s.metrics.connects.WithLabelValues(r.metric).Inc()
	s.log.Info("device connection refused", "client", c.ID(), "remote", c.Remote(), "code", r.code.Code, "reason", why)
	return packets.Code{Code: r.code.Code, Reason: why}
}

// authenticate checks a CONNECT against the device's inventory entry and
// credential. On success it returns the connection's link; on failure the
// refusal and a reason for the log.
func (s *Server) authenticate(c *mqttd.Conn, pk *packets.Packet) (*link, refusal, string) {
	imei := pk.Connect.ClientIdentifier
	if !store.ValidIMEI(imei) {
		return nil, refuseClientID, "client id is not an IMEI"
	}
	if string(pk.Connect.Username) != imei {
		return nil, refuseCredentials, "username differs from the client id"
	}
	// A will is published without the ACL check of a PUBLISH: it may only
	// name one of the device's own up topics, where it reaches nobody.
	if _, suffix, _ := protocol.SplitTopic(pk.Connect.WillTopic); pk.Connect.WillFlag &&
		(!topicAllowed(imei, pk.Connect.WillTopic, true) || !protocol.IsUpTopic(suffix)) {
		return nil, refuseNotAuthorized, "will topic is not one of the device's up topics"
	}
	var (
		dev    *store.Device
		cred   *store.DeviceCredential
		forbid bool
	)
	err := s.db.ViewDevice(context.Background(), imei, store.ViewAuthentication, func(tx *store.Tx) error {
		var err error
		if dev, err = tx.Device(imei); err != nil {
			return err
		}
		if cred, err = tx.DeviceCredential(imei); err != nil {
			return err
		}
		os, err := tx.OrgSettings(dev.OrganizationID)
		if err != nil {
			return err
		}
		forbid = os.ForbidLegacyFirmware
		return nil
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, refuseNotAuthorized, "imei is in no organization's inventory"
	case err != nil:
		s.log.Error("read device credential", "imei", imei, "error", err)
		return nil, refuseUnavailable, "store error"
	}
	l := newLink(s.newConnID(), c, dev)
	password := string(pk.Connect.Password)
	switch {
	case strings.HasPrefix(password, protocol.BootstrapPrefix):
		if ref, why := s.bootstrap(l, cred, password); why != "" {
			return nil, ref, why
		}
	case strings.HasPrefix(password, protocol.LegacyPrefix):
		fw := strings.TrimPrefix(password, protocol.LegacyPrefix)
		switch {
		case !validFirmware(fw):
			return nil, refuseCredentials, "legacy password without a firmware version"
		case !protocol.FirmwareBelow(fw, protocol.MinTokenFirmware):
			return nil, refuseCredentials, "firmware " + fw + " must authenticate with a token"
		case !s.devices.AllowLegacyFirmware:
			return nil, refuseCredentials, "legacy firmware is disabled"
		case forbid:
			return nil, refuseCredentials, "the organization forbids legacy firmware"
		case cred.Generation > 0:
			return nil, refuseCredentials, "the device was issued a token and must use it"
		}
		l.legacy, l.firmware = true, fw
	default:
		if !tokenMatches(password, cred.TokenHash) {
			return nil, refuseCredentials, "token missing, wrong or revoked"
		}
	}
	return l, refusal{}, ""
}

// bootstrap verifies a factory-key proof and issues the device a fresh
// token: its hash replaces any older one on disk before the connection is
// accepted, and the token itself waits on the link for delivery.
func (s *Server) bootstrap(l *link, cred *store.DeviceCredential, password string) (refusal, string) {
	now := s.now()
	key := protocol.FactoryKey(s.master, l.imei)
	if err := protocol.VerifyBootstrap(password, key, l.imei, now, s.devices.BootstrapSkew); err != nil {
		return refuseCredentials, strings.TrimPrefix(err.Error(), "protocol: ")
	}
	// A proof is accepted once: its timestamp must be later than the last
	// accepted one, so a captured bootstrap password cannot be replayed.
	ts, _ := strconv.ParseInt(strings.SplitN(strings.TrimPrefix(password, protocol.BootstrapPrefix), ":", 2)[0], 10, 64)
	if ts <= cred.LastBootstrap {
		return refuseCredentials, "bootstrap proof already used"
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return refuseUnavailable, "token generation failed"
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	sum := sha256.Sum256([]byte(token))
	err := s.commit(&l.dev, func(tx *store.Tx) error {
		c, err := tx.DeviceCredential(l.imei)
		if err != nil {
			return err
		}
		if ts <= c.LastBootstrap {
			return errReplayedProof
		}
		return tx.IssueDeviceToken(l.imei, sum[:], ts)
	})
	switch {
	case errors.Is(err, errReplayedProof):
		return refuseCredentials, "bootstrap proof already used"
	case err != nil:
		s.log.Error("store device token", "imei", l.imei, "error", err)
		return refuseUnavailable, "store error"
	}
	s.metrics.bootstraps.Inc()
	l.token = &protocol.TokenGrant{Token: token, IssuedAt: now.Unix()}
	return refusal{}, ""
}

var errReplayedProof = errors.New("broker: bootstrap proof already used")

// validFirmware reports whether fw is dot-separated numbers such as 3.9.1.
func validFirmware(fw string) bool {
	if fw == "" || len(fw) > 32 {
		return false
	}
	for _, part := range strings.Split(fw, ".") {
		if part == "" || strings.Trim(part, "0123456789") != "" {
			return false
		}
	}
	return true
}

// tokenMatches reports whether token hashes to hash, in constant time.
func tokenMatches(token string, hash []byte) bool {
	sum := sha256.Sum256([]byte(token))
	return len(hash) == len(sum) && subtle.ConstantTimeCompare(sum[:], hash) == 1
}
