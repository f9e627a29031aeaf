package cloudapi

import (
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"golang.org/x/crypto/bcrypt"
)

// countWork makes p count the bcrypt work of its comparisons, 2^cost each
// (bcrypt's rounds), in *work.
func countWork(p *passwordChecker, work *int) {
	p.compareHash = func(hash, password []byte) error {
		cost, err := bcrypt.Cost(hash)
		if err == nil {
			*work += 1 << cost
		}
		return bcrypt.CompareHashAndPassword(hash, password)
	}
}

// TestPasswordCheckWork counts the bcrypt work of checks: an unknown
// account costs what a wrong password costs, whatever the cost its hash
// was made at, so that the time of a sign-in tells nothing of which
// accounts exist.
func TestPasswordCheckWork(t *testing.T) {
	const configured = 6
	p, err := newPasswordChecker(configured, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var work int
	countWork(p, &work)
	hashAt := func(cost int) []byte {
		h, err := bcrypt.GenerateFromPassword([]byte("Right1234"), cost)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	low, same, high := hashAt(bcrypt.MinCost), hashAt(configured), hashAt(configured+2)
	steps := []struct {
		name     string
		hash     []byte
		password string
		match    bool
		work     int
	}{
		{"unknown account", nil, "Right1234", false, 1 << configured},
		{"wrong password", same, "Wrong1234", false, 1 << configured},
		{"right password", same, "Right1234", true, 1 << configured},
		{"wrong password, hash of a lower cost", low, "Wrong1234", false, 1 << configured},
		{"right password, hash of a lower cost", low, "Right1234", true, 1 << configured},
		{"not a bcrypt hash", []byte("not a hash"), "Right1234", false, 1 << configured},
		// A stored hash of a higher cost raises every check to its work.
		{"hash of a higher cost", high, "Wrong1234", false, 1 << (configured + 2)},
		{"unknown account after it", nil, "Right1234", false, 1 << (configured + 2)},
		{"hash of the configured cost after it", same, "Wrong1234", false, 1 << (configured + 2)},
		{"hash of a lower cost after it", low, "Wrong1234", false, 1 << (configured + 2)},
	}
	for _, s := range steps {
		work = 0
		match, err := p.compare(t.Context(), s.hash, s.password)
		if err != nil || match != s.match || work != s.work {
			t.Errorf("%s: match %v, err %v, work %d; want match %v, work %d", s.name, match, err, work, s.match, s.work)
		}
	}
}

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
