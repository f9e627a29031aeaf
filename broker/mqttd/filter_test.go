package mqttd

import (
	"strings"
	"testing"
)

func TestMatchFilter(t *testing.T) {
	cases := []struct {
		filter, topic string
		want          bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/c", false},
		{"a/b", "a", false},
		{"a", "a/b", false},
		{"a/b", "a/b/", false},
		{"a/b/", "a/b/", true},
		{"+", "a", true},
		{"+", "a/b", false},
		{"+", "", true},
		{"+", "/", false},
		{"+/+", "/", true},
		{"+/+", "/finance", true},
		{"/+", "/finance", true},
		{"a/+", "a/", true},
		{"a/+", "a", false},
		{"a/+/c", "a/b/c", true},
		{"a/+/c", "a//c", true},
		{"a/+/c", "a/b/d", false},
		{"a/+/c", "a/b/c/d", false},
		{"#", "a", true},
		{"#", "a/b/c", true},
		{"#", "/", true},
		{"a/#", "a", true}, // "#" covers the parent level too
		{"a/#", "a/b", true},
		{"a/#", "a/b/c", true},
		{"a/#", "ab", false},
		{"a/#", "b/a", false},
		{"a/b/#", "a", false},
		{"a/+/#", "a/b", true},
		{"a/+/#", "a", false},
		{"+/#", "a", true},
		{"dev/+/cmd", "dev/1/cmd", true},
		{"dev/+/cmd", "dev/1/2/cmd", false},
		// Topics starting with "$" match no filter starting with a wildcard.
		{"#", "$SYS/x", false},
		{"+/x", "$SYS/x", false},
		{"$SYS/#", "$SYS/x", true},
		{"$SYS/+", "$SYS/x", true},
		{"a/#", "a/$x", true},
	}
	for _, tc := range cases {
		if got := matchFilter(tc.filter, tc.topic); got != tc.want {
			t.Errorf("matchFilter(%q, %q) = %v, want %v", tc.filter, tc.topic, got, tc.want)
		}
	}
}

func TestValidFilter(t *testing.T) {
	cases := []struct {
		filter string
		want   bool
	}{
		{"a", true},
		{"a/b", true},
		{"/", true},
		{"a//b", true},
		{"#", true},
		{"+", true},
		{"a/#", true},
		{"a/+/b", true},
		{"+/+/#", true},
		{"$SYS/#", true},
		{"", false},
		{"a/#/b", false},
		{"#/a", false},
		{"a#", false},
		{"a/b#", false},
		{"a+", false},
		{"a/+b", false},
		{"+a/b", false},
		{"##", false},
		{"++", false},
		{"a\x00b", false},
		{strings.Repeat("a", 65535), true},
		{strings.Repeat("a", 65536), false},
	}
	for _, tc := range cases {
		name := tc.filter
		if len(name) > 20 {
			name = name[:20] + "…"
		}
		if got := validFilter(tc.filter); got != tc.want {
			t.Errorf("validFilter(%q) = %v, want %v", name, got, tc.want)
		}
	}
}
