package live

import (
	"crypto/rand"
	"testing"
)

// TestStreamIDs: stream ids are what rand.Text makes; anything else (a
// NATS wildcard or separator above all) is no stream's.
func TestStreamIDs(t *testing.T) {
	t.Parallel()
	for range 100 {
		if id := rand.Text(); !validID(id) {
			t.Fatalf("rand.Text gave %q, which validID refuses", id)
		}
	}
	for _, id := range []string{"", "ABC", "AAAAAAAAAAAAAAAAAAAAAAAAA>", "AAAAAAAAAAAA.AAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAAAAA*",
		"aaaaaaaaaaaaaaaaaaaaaaaaaa", "AAAAAAAAAAAAAAAAAAAAAAAAA1"} {
		if validID(id) {
			t.Errorf("validID(%q) = true", id)
		}
	}
}
