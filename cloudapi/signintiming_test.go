package cloudapi

import (
	"testing"
	"time"

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
