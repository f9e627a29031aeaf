package bolt_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/fleetcam/fleetcam/store"
	bbolt "go.etcd.io/bbolt"
)

// The outbox counters are 8 bytes big-endian under "cursor" and
// "generation" of webhook_outbox; a value of another length reads 0.
func TestOutboxCountersKeepTheirLayout(t *testing.T) {
	s := openWebhookStore(t)
	org := s.organization()
	const url = "https://r.example.com/e"
	// disabled stores the endpoint disabled, as a 410 Gone left it.
	disabled := func(btx *bbolt.Tx) error {
		return btx.Bucket([]byte("webhook_endpoints")).Put(key(org, url),
			fmt.Appendf(nil, `{"organizationId":%d,"url":%q,"disabled":true}`, org, url))
	}
	s.raw(func(btx *bbolt.Tx) error {
		b := btx.Bucket([]byte("webhook_outbox"))
		if err := b.Put([]byte("cursor"), be8(1234)); err != nil {
			return err
		}
		if err := b.Put([]byte("generation"), []byte{1, 2, 3}); err != nil {
			return err
		}
		return disabled(btx)
	})
	s.update(func(tx *store.Tx) error {
		if c, g := tx.WebhookCursor(), tx.OutboxGeneration(); c != 1234 || g != 0 {
			t.Errorf("cursor %d generation %d, want 1234 and 0", c, g)
		}
		return tx.SetWebhookCursor(1300)
	})
	// Saving the URL enables the endpoint again, which moves the generation.
	for want := int64(1); want <= 2; want++ {
		s.update(func(tx *store.Tx) error {
			return tx.PutWebhookSettings(&store.WebhookSettings{OrganizationID: org, EventURLs: []string{url}})
		})
		s.raw(func(btx *bbolt.Tx) error {
			b := btx.Bucket([]byte("webhook_outbox"))
			if v := b.Get([]byte("generation")); !bytes.Equal(v, be8(want)) {
				t.Errorf("generation stored as %x, want %x", v, be8(want))
			}
			if v := b.Get([]byte("cursor")); !bytes.Equal(v, be8(1300)) {
				t.Errorf("cursor stored as %x, want %x", v, be8(1300))
			}
			return disabled(btx)
		})
	}
}
