// Package protocol is the device wire contract: topic names, credentials and
// payload types spoken between a dashcam and fleetcam over MQTT. It is
// imported by the broker and by the device simulator and imports nothing of
// fleetcam, so third-party firmware can be written against it (and against
// docs/device-protocol.md, which states the same contract in prose).
package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Version is the contract version; it is the second segment of every topic.
const Version = "v1"

// Topic layout: every topic of a device starts with Prefix/<imei>/.
// A device may publish only under Up(imei, …) and subscribe only to Down(imei, …).
const (
	Prefix = "fleetcam/" + Version

	// Device → cloud.
	TopicStatus    = "up/status"     // Status, on connect and on change
	TopicGPS       = "up/gps"        // GPSBatch
	TopicEvent     = "up/event"      // Event
	TopicConfigAck = "up/config-ack" // ConfigAck
	TopicReply     = "up/reply"      // Reply to a Command
	TopicMedia     = "up/media"      // MediaReady, after an upload finished

	// Cloud → device.
	TopicConfig  = "down/config"  // DesiredConfig, delivered on every connect until acknowledged
	TopicCommand = "down/command" // Command
	TopicToken   = "down/token"   // TokenGrant, after a bootstrap
)

// upTopics are the device → cloud topic suffixes: a device publishes to no other.
var upTopics = [...]string{TopicStatus, TopicGPS, TopicEvent, TopicConfigAck, TopicReply, TopicMedia}

// UpTopics returns the device → cloud topic suffixes, TopicStatus to
// TopicMedia: a device publishes to no other.
func UpTopics() []string { return slices.Clone(upTopics[:]) }

// IsUpTopic reports whether suffix is one of UpTopics.
func IsUpTopic(suffix string) bool { return slices.Contains(upTopics[:], suffix) }

// Topic returns the full topic of suffix (one of the Topic* constants) for imei.
func Topic(imei, suffix string) string { return Prefix + "/" + imei + "/" + suffix }

// DownFilter is the subscription filter a device uses for everything the cloud sends it.
func DownFilter(imei string) string { return Prefix + "/" + imei + "/down/#" }

// SplitTopic returns the IMEI and suffix of a device topic, or ok false when
// topic is not under Prefix.
func SplitTopic(topic string) (imei, suffix string, ok bool) {
	rest, found := strings.CutPrefix(topic, Prefix+"/")
	if !found {
		return "", "", false
	}
	imei, suffix, found = strings.Cut(rest, "/")
	if !found || imei == "" || suffix == "" {
		return "", "", false
	}
	return imei, suffix, true
}

// Credentials. The MQTT ClientID and username are the IMEI. The password is one of:
//
//	<token>                                       the device secret token (firmware 3.12+)
//	bootstrap:v1:<unix seconds>:<hex proof>        first connection, or after a factory reset
//	legacy:<firmware version>                     firmware below 3.12, no token
const (
	BootstrapPrefix = "bootstrap:v1:"
	LegacyPrefix    = "legacy:"
)

// FactoryKey derives a device's factory key from the fleet's factory master
// secret. Real dashcams carry it from the factory; the cloud derives it.
func FactoryKey(master []byte, imei string) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte("fleetcam factory key\x00" + imei))
	return m.Sum(nil)
}

// BootstrapPassword is the password a device without a token presents: a
// proof of its factory key over its IMEI and the current time.
func BootstrapPassword(factoryKey []byte, imei string, now time.Time) string {
	ts := strconv.FormatInt(now.Unix(), 10)
	return BootstrapPrefix + ts + ":" + bootstrapProof(factoryKey, imei, ts)
}

func bootstrapProof(factoryKey []byte, imei, ts string) string {
	m := hmac.New(sha256.New, factoryKey)
	m.Write([]byte(imei + ":" + ts))
	return hex.EncodeToString(m.Sum(nil))
}

// VerifyBootstrap checks a bootstrap password against the device's factory
// key, accepting timestamps within skew of now.
func VerifyBootstrap(password string, factoryKey []byte, imei string, now time.Time, skew time.Duration) error {
	rest, ok := strings.CutPrefix(password, BootstrapPrefix)
	if !ok {
		return fmt.Errorf("protocol: not a bootstrap password")
	}
	ts, proof, ok := strings.Cut(rest, ":")
	if !ok {
		return fmt.Errorf("protocol: malformed bootstrap password")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("protocol: malformed bootstrap timestamp")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > skew || d < -skew {
		return fmt.Errorf("protocol: bootstrap timestamp outside the accepted window")
	}
	if !hmac.Equal([]byte(proof), []byte(bootstrapProof(factoryKey, imei, ts))) {
		return fmt.Errorf("protocol: bootstrap proof does not match")
	}
	return nil
}

// MinTokenFirmware is the first firmware that authenticates with a token.
const MinTokenFirmware = "3.12"

// FirmwareBelow reports whether version a is lower than version b, comparing
// dot-separated numbers ("3.9.1" < "3.12").
func FirmwareBelow(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}
