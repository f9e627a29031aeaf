package bolt_test

import (
	"encoding/json"
	"testing"

	"github.com/fleetcam/fleetcam/store"
	bbolt "go.etcd.io/bbolt"
)

// messageKeys counts the keys of the messages bucket.
func (s *webhookStore) messageKeys() int {
	s.t.Helper()
	n := 0
	s.raw(func(btx *bbolt.Tx) error {
		n = btx.Bucket([]byte("messages")).Stats().KeyN
		return nil
	})
	return n
}

// TestMessagesAfterReadsRowsWithRenderedPayloads reads a message as the
// outbox held it before the store recorded typed facts: its webhook data
// object rendered under "payload". It comes back with that payload, byte
// for byte, and no fact.
func TestMessagesAfterReadsRowsWithRenderedPayloads(t *testing.T) {
	s := openWebhookStore(t)
	const payload = `{"name":"Alpha","serialNumber":"490154203237518","time":1772366400}`
	row := `{"seq":1,"kind":"systemMessages","subType":"deviceRemoved","organizationId":3,"partnerId":2,` +
		`"imei":"490154203237518","time":"2026-03-01T12:00:00Z","payload":` + payload + `}`
	s.raw(func(btx *bbolt.Tx) error { return btx.Bucket([]byte("messages")).Put(be8(1), []byte(row)) })
	var msgs []store.Message
	s.view(func(tx *store.Tx) (err error) { msgs, err = tx.MessagesAfter(0, 0); return err })
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want the stored row", len(msgs))
	}
	m := msgs[0]
	if m.Seq != 1 || m.Kind != store.MessageSystem || m.SubType != store.SystemDeviceRemoved || m.OrganizationID != 3 ||
		m.IMEI != "490154203237518" || string(m.Payload) != payload || m.Removed != nil {
		t.Fatalf("message %+v payload %s", m, m.Payload)
	}
}

// A message is stored as JSON under its sequence, 8 bytes big-endian, and
// sequences carry on from the bucket's sequence.
func TestEmitKeysMessagesBySequence(t *testing.T) {
	s := openWebhookStore(t)
	s.raw(func(btx *bbolt.Tx) error { return btx.Bucket([]byte("messages")).SetSequence(41) })
	s.update(func(tx *store.Tx) error {
		return tx.Emit(store.Message{Kind: store.MessageGPS, OrganizationID: 3, IMEI: "490154203237518",
			GPS: []store.GPSPoint{{Lat: 52.37}}})
	})
	s.raw(func(btx *bbolt.Tx) error {
		raw := btx.Bucket([]byte("messages")).Get(be8(42))
		var m store.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("message 42 is %q: %v", raw, err)
		}
		if m.Seq != 42 || m.Kind != store.MessageGPS || len(m.GPS) != 1 || !m.Time.Equal(s.clock.Now()) {
			t.Errorf("message 42 is %+v", m)
		}
		return nil
	})
}

// Pruning deletes the keys of the messages the cursor has passed, oldest
// first, leaves the others, and the sequence carries on after it emptied
// the bucket.
func TestPruneMessagesDeletesKeys(t *testing.T) {
	s := openWebhookStore(t)
	emit := func(n int) {
		s.update(func(tx *store.Tx) error {
			for range n {
				if err := tx.Emit(store.Message{Kind: store.MessageGPS, OrganizationID: 1}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	prune := func(limit int) (n int, more bool) {
		s.update(func(tx *store.Tx) (err error) { n, more, err = tx.PruneMessages(limit); return err })
		return n, more
	}
	emit(100)
	s.update(func(tx *store.Tx) error { return tx.SetWebhookCursor(60) })
	if n, more := prune(50); n != 50 || !more || s.messageKeys() != 50 {
		t.Fatalf("pruned %d (more %v), %d keys left, want 50, more, 50", n, more, s.messageKeys())
	}
	if n, more := prune(50); n != 10 || more || s.messageKeys() != 40 {
		t.Fatalf("pruned %d (more %v), %d keys left, want 10, 40", n, more, s.messageKeys())
	}
	s.raw(func(btx *bbolt.Tx) error {
		if k, _ := btx.Bucket([]byte("messages")).Cursor().First(); string(k) != string(be8(61)) {
			t.Errorf("first key left is %x, want message 61", k)
		}
		return nil
	})
	s.update(func(tx *store.Tx) error { return tx.SetWebhookCursor(100) })
	if n, _ := prune(0); n != 40 || s.messageKeys() != 0 {
		t.Fatalf("pruned %d, %d keys left, want 40 and none", n, s.messageKeys())
	}
	emit(1)
	s.raw(func(btx *bbolt.Tx) error {
		if btx.Bucket([]byte("messages")).Get(be8(101)) == nil {
			t.Error("the message after an emptied bucket is not message 101")
		}
		return nil
	})
}
