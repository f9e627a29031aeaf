package protocol

import (
	"strings"
	"testing"
	"time"
)

func TestSplitTopic(t *testing.T) {
	tests := []struct {
		topic, imei, suffix string
		ok                  bool
	}{
		{Topic("356938035643809", TopicEvent), "356938035643809", TopicEvent, true},
		{Topic("356938035643809", TopicCommand), "356938035643809", TopicCommand, true},
		{"fleetcam/v1/356938035643809", "", "", false},
		{"fleetcam/v1//up/event", "", "", false},
		{"fleetcam/v2/356938035643809/up/event", "", "", false},
		{"other/356938035643809/up/event", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.topic, func(t *testing.T) {
			imei, suffix, ok := SplitTopic(tc.topic)
			if imei != tc.imei || suffix != tc.suffix || ok != tc.ok {
				t.Fatalf("SplitTopic(%q) = %q, %q, %v", tc.topic, imei, suffix, ok)
			}
		})
	}
	if f := DownFilter("356938035643809"); f != "fleetcam/v1/356938035643809/down/#" {
		t.Fatalf("DownFilter = %q", f)
	}
}

func TestIsUpTopic(t *testing.T) {
	for _, suffix := range []string{TopicStatus, TopicGPS, TopicEvent, TopicConfigAck, TopicReply, TopicMedia} {
		if !IsUpTopic(suffix) {
			t.Errorf("IsUpTopic(%q) = false", suffix)
		}
	}
	for _, suffix := range []string{"up/nope", "up/", "up/status/x", TopicConfig, TopicCommand, TopicToken, "status", ""} {
		if IsUpTopic(suffix) {
			t.Errorf("IsUpTopic(%q) = true", suffix)
		}
	}
	up := UpTopics()
	up[0] = "up/nope"
	if IsUpTopic("up/nope") {
		t.Error("a change to what UpTopics returned changed the topics")
	}
}

func TestBootstrapProof(t *testing.T) {
	master := []byte("0123456789abcdef0123456789abcdef")
	imei := "356938035643809"
	key := FactoryKey(master, imei)
	now := time.Unix(1_800_000_000, 0)
	pw := BootstrapPassword(key, imei, now)
	if !strings.HasPrefix(pw, BootstrapPrefix) {
		t.Fatalf("password %q lacks the bootstrap prefix", pw)
	}
	tests := []struct {
		name     string
		password string
		key      []byte
		imei     string
		at       time.Time
		ok       bool
	}{
		{"valid", pw, key, imei, now, true},
		{"within skew", pw, key, imei, now.Add(9 * time.Minute), true},
		{"stale", pw, key, imei, now.Add(11 * time.Minute), false},
		{"from the future", pw, key, imei, now.Add(-11 * time.Minute), false},
		{"another device's key", pw, FactoryKey(master, "490154203237518"), imei, now, false},
		{"another imei", pw, key, "490154203237518", now, false},
		{"tampered proof", pw[:len(pw)-1] + "0", key, imei, now, pw[len(pw)-1] == '0'},
		{"not a bootstrap password", "token", key, imei, now, false},
		{"malformed", BootstrapPrefix + "x", key, imei, now, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyBootstrap(tc.password, tc.key, tc.imei, tc.at, 10*time.Minute)
			if (err == nil) != tc.ok {
				t.Fatalf("VerifyBootstrap = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestFirmwareBelow(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"3.11.9", "3.12", true},
		{"3.9", "3.12", true},
		{"3.12", "3.12", false},
		{"3.12.0", "3.12", false},
		{"3.12.1", "3.12", false},
		{"4.0", "3.12", false},
		{"2.99.99", "3.12", true},
	}
	for _, tc := range tests {
		if got := FirmwareBelow(tc.a, tc.b); got != tc.want {
			t.Errorf("FirmwareBelow(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
