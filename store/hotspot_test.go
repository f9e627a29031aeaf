package store_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func TestNewHotspotPassword(t *testing.T) {
	t.Parallel()
	const n = 20000
	counts := map[byte]int{}
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		p, err := NewHotspotPassword()
		if err != nil {
			t.Fatal(err)
		}
		if len(p) != HotspotPasswordLength {
			t.Fatalf("length %d: %q", len(p), p)
		}
		if !strings.ContainsAny(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") || !strings.ContainsAny(p, "abcdefghijklmnopqrstuvwxyz") ||
			!strings.ContainsAny(p, "0123456789") {
			t.Fatalf("missing a character class: %q", p)
		}
		for _, c := range []byte(p) {
			if !strings.ContainsRune(HotspotAlphabet, rune(c)) {
				t.Fatalf("character %q outside the alphabet in %q", c, p)
			}
			counts[c]++
		}
		if seen[p] {
			t.Fatalf("password %q drawn twice", p)
		}
		seen[p] = true
	}
	if len(counts) != 62 {
		t.Fatalf("%d distinct characters used, want 62", len(counts))
	}
	// Every valid password is equally likely. Then a given position holds a
	// given digit with probability 10·V(n-1 | upper, lower)/V(n) / 10, where
	// V counts the valid strings (inclusion-exclusion over the missing
	// classes); likewise for letters. A chi-square test with 61 degrees of
	// freedom; 120 is far beyond its 99.999th percentile (about 112).
	pow := func(b float64) float64 { return math.Pow(b, HotspotPasswordLength-1) }
	all := math.Pow(62, HotspotPasswordLength) - 2*math.Pow(36, HotspotPasswordLength) - math.Pow(52, HotspotPasswordLength) +
		math.Pow(10, HotspotPasswordLength) + 2*math.Pow(26, HotspotPasswordLength)
	perDigit := (pow(62) - 2*pow(36) + pow(10)) / all
	perLetter := (pow(62) - pow(36) - pow(52) + pow(26)) / all
	chi := 0.0
	for _, c := range []byte(HotspotAlphabet) {
		p := perLetter
		if c >= '0' && c <= '9' {
			p = perDigit
		}
		expected := float64(n*HotspotPasswordLength) * p
		d := float64(counts[c]) - expected
		chi += d * d / expected
	}
	if chi > 120 || math.IsNaN(chi) {
		t.Fatalf("character distribution is not uniform: chi-square %.1f", chi)
	}
}

func TestValidHotspotPassword(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    string
		ok   bool
	}{
		{"default", DefaultHotspotPassword, true},
		{"19 characters", "Abcdefghij123456789", false},
		{"21 characters", "Abcdefghij12345678901", false},
		{"no uppercase", "abcdefghij1234567890", false},
		{"no lowercase", "ABCDEFGHIJ1234567890", false},
		{"no digit", "ABCDEFGHIJabcdefghij", false},
		{"symbol", "Abcdefghij123456789!", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ValidHotspotPassword(tc.p); got != tc.ok {
				t.Fatalf("ValidHotspotPassword(%q) = %v", tc.p, got)
			}
		})
	}
}

func TestHotspotPasswordLifecycle(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newSettingsFixture(t, 1)
		imei := f.imeis[0]
		setHotspot := func(on bool) {
			t.Helper()
			f.update(func(tx *Tx) error {
				ds, err := tx.DeviceSettings(imei)
				if err != nil {
					return err
				}
				cfg := DefaultDeviceConfig()
				if ds.Device != nil {
					cfg = *ds.Device
				}
				cfg.HotspotEnabled = on
				ds.Device = &cfg
				return tx.PutDeviceSettings(ds, "test")
			})
		}
		password := func() string { return f.effective(imei).HotspotPassword }

		if p := password(); p != DefaultHotspotPassword {
			t.Fatalf("a new device has %q", p)
		}
		setHotspot(true)
		first := password()
		if first == DefaultHotspotPassword || !ValidHotspotPassword(first) {
			t.Fatalf("first enabling drew %q", first)
		}
		setHotspot(true)
		if password() != first {
			t.Fatal("a write that keeps the hotspot on changed the password")
		}
		setHotspot(false)
		if password() != first {
			t.Fatal("switching off changed the password")
		}
		setHotspot(true)
		second := password()
		if second == first || !ValidHotspotPassword(second) {
			t.Fatalf("Off to On kept %q", second)
		}

		// Factory reset: the fixed default, the state kept, a new version to push.
		v := f.effective(imei).Version
		f.update(func(tx *Tx) error { return tx.ResetHotspot(imei) })
		e := f.effective(imei)
		if e.HotspotPassword != DefaultHotspotPassword || !e.Device.HotspotEnabled || e.Version != v+1 {
			t.Fatalf("after reset: password %q on %v version %d", e.HotspotPassword, e.Device.HotspotEnabled, e.Version)
		}
		setHotspot(true)
		if password() != DefaultHotspotPassword {
			t.Fatal("a write that keeps the hotspot on replaced the default")
		}
		setHotspot(false)
		setHotspot(true)
		if p := password(); p == DefaultHotspotPassword || p == second || p == first {
			t.Fatalf("Off to On after reset kept %q", p)
		}

		// The password is never in the audit log or the messages.
		entries, _, err := f.db.AuditLog(t.Context(), AuditFilter{}, Page{})
		if err != nil {
			t.Fatal(err)
		}
		rotations := 0
		for _, a := range entries {
			for _, p := range []string{first, second, password()} {
				if bytes.Contains(a.Before, []byte(p)) || bytes.Contains(a.After, []byte(p)) || strings.Contains(a.Reason, p) {
					t.Fatalf("audit entry %d holds the password", a.ID)
				}
			}
			if a.Action == "device.hotspot.password" {
				rotations++
			}
		}
		if rotations != 3 {
			t.Fatalf("%d password rotations audited, want 3", rotations)
		}
		msgs := allMessages(t, f.db)
		for _, m := range msgs {
			raw, _ := json.Marshal(m)
			if bytes.Contains(raw, []byte(first)) || bytes.Contains(raw, []byte(second)) {
				t.Fatal("a message holds the password")
			}
		}
	})
}

func TestHotspotFromOrganizationDefault(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newSettingsFixture(t, 2)
		cfg := DefaultDeviceConfig()
		cfg.HotspotEnabled = true
		f.update(func(tx *Tx) error {
			return tx.PutOrgSettings(&OrgSettings{OrganizationID: f.org.ID, Device: &cfg}, "test")
		})
		a, b := f.effective(f.imeis[0]).HotspotPassword, f.effective(f.imeis[1]).HotspotPassword
		if !ValidHotspotPassword(a) || !ValidHotspotPassword(b) || a == b || a == DefaultHotspotPassword {
			t.Fatalf("organization default drew %q and %q", a, b)
		}
		// A device that joins later switches its hotspot on with the default and gets its own password.
		late := settingsIMEI(99)
		f.update(func(tx *Tx) error {
			return tx.AddDevice(&Device{IMEI: late, OrganizationID: f.org.ID, PartnerID: f.org.PartnerID})
		})
		if p := f.effective(late).HotspotPassword; !ValidHotspotPassword(p) || p == DefaultHotspotPassword || p == a || p == b {
			t.Fatalf("late device has %q", p)
		}
		if err := f.db.Update(t.Context(), Actor{}, func(tx *Tx) error { return tx.ResetHotspot(settingsIMEI(500)) }); err == nil {
			t.Fatal("reset of an unknown device succeeded")
		}
	})
}
