//go:build !race

// This test times sign-ins, which the race detector slows down without
// finding anything more: under it, bcrypt's rounds cost about ten times
// as much, and the 32 sign-ins at cost 8 took about ten CPU-seconds of
// make test's race-detected run. It runs in the run without the race
// detector, make test's API tests on PostgreSQL; the package's other
// sign-in tests keep the sign-in's code under the race detector.

package cloudapi

import (
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
)

// TestSigninTimeTellsNothing signs in with wrong passwords, alternately to
// an account whose hash is of a lower cost than auth.bcryptCost (as a
// seeding tool or an older setting makes them) and to an unknown address,
// and compares the medians of the two: they are of one bcrypt work, so far
// closer than the factor of 16 that cost 4 against cost 8 makes. The bound
// is a ratio, not a time, so the machine's speed does not matter.
func TestSigninTimeTellsNothing(t *testing.T) {
	e := newEnv(t, func(c *configs.Config, _ *Deps) {
		c.Auth.BcryptCost = 8
		c.Auth.Throttle.AccountFreeAttempts = 1000
		c.Auth.Throttle.AddressFreeAttempts = 1000
	})
	// partner@example.com's hash is of bcrypt.MinCost (newEnv).
	signin := func(email string) time.Duration {
		start := time.Now()
		e.do("POST", "/v2/authenticate", "", map[string]any{"email": email, "password": "Wrong1234"}).wantError(401, nameUnauthorized)
		return time.Since(start)
	}
	signin("partner@example.com")
	signin("nobody@example.com")
	const samples = 15
	var known, unknown []time.Duration
	for range samples {
		known = append(known, signin("partner@example.com"))
		unknown = append(unknown, signin("nobody@example.com"))
	}
	median := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	k, u := median(known), median(unknown)
	if ratio := float64(max(k, u)) / float64(min(k, u)); ratio > 4 {
		t.Fatalf("median sign-in %v for a known address, %v for an unknown one (%.1f times)", k, u, ratio)
	}
	t.Logf("median sign-in %v for a known address, %v for an unknown one", k, u)
}
