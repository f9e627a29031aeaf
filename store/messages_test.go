package store_test

import (
	"testing"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// allMessages returns every message still in the store, oldest first.
func allMessages(t testing.TB, db *DB) []Message {
	t.Helper()
	var out []Message
	err := db.View(t.Context(), func(tx *Tx) error {
		var err error
		out, err = tx.MessagesAfter(0, 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func emitGPS(t *testing.T, db *DB, n int) {
	t.Helper()
	mustUpdate(t, db, func(tx *Tx) error {
		if err := ensureOrganization(tx); err != nil {
			return err
		}
		for i := range n {
			if err := tx.Emit(Message{Kind: MessageGPS, OrganizationID: 1, IMEI: "490154203237518", GPS: []GPSPoint{{Lat: float64(i)}}}); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestMessagesAfter(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db, _ := openTest(t)
		emitGPS(t, db, 10)
		for _, tc := range []struct {
			name       string
			after      int64
			limit      int
			first, len int64
		}{
			{"all", 0, 0, 1, 10},
			{"limited", 0, 3, 1, 3},
			{"after a sequence", 7, 0, 8, 3},
			{"after the last", 10, 5, 0, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var got []Message
				db.View(t.Context(), func(tx *Tx) error {
					var err error
					got, err = tx.MessagesAfter(tc.after, tc.limit)
					return err
				})
				if int64(len(got)) != tc.len || (len(got) > 0 && got[0].Seq != tc.first) {
					t.Fatalf("got %d messages from %v, want %d from %d", len(got), got, tc.len, tc.first)
				}
			})
		}
	})
}

// Pruning deletes only what the stored cursor has passed, oldest first, in
// transactions of at most the limit, and sequences carry on after it.
func TestPruneMessages(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db, _ := openTest(t)
		emitGPS(t, db, 1000)

		prune := func(limit int) (n int, more bool) {
			t.Helper()
			mustUpdate(t, db, func(tx *Tx) error {
				var err error
				n, more, err = tx.PruneMessages(limit)
				return err
			})
			return n, more
		}
		if n, more := prune(100); n != 0 || more || len(allMessages(t, db)) != 1000 {
			t.Fatalf("without a cursor pruned %d (more %v), %d messages left", n, more, len(allMessages(t, db)))
		}

		mustUpdate(t, db, func(tx *Tx) error { return tx.SetWebhookCursor(750) })
		var rounds []int
		for more := true; more; {
			var n int
			n, more = prune(300)
			rounds = append(rounds, n)
		}
		if len(rounds) != 3 || rounds[0] != 300 || rounds[1] != 300 || rounds[2] != 150 {
			t.Fatalf("pruned in rounds %v, want 300 300 150", rounds)
		}
		msgs := allMessages(t, db)
		if len(msgs) != 250 || msgs[0].Seq != 751 || msgs[249].Seq != 1000 {
			t.Fatalf("%d messages left, want 751 to 1000", len(msgs))
		}
		for i, m := range msgs {
			if len(m.GPS) != 1 || m.GPS[0].Lat != float64(750+i) {
				t.Fatalf("message %d carries %+v, want lat %d", m.Seq, m.GPS, 750+i)
			}
		}

		// Everything passed: no message is left and the sequence carries on.
		mustUpdate(t, db, func(tx *Tx) error { return tx.SetWebhookCursor(1000) })
		if n, more := prune(0); n != 250 || more || len(allMessages(t, db)) != 0 {
			t.Fatalf("pruned %d (more %v), %d messages left", n, more, len(allMessages(t, db)))
		}
		emitGPS(t, db, 1)
		if msgs := allMessages(t, db); len(msgs) != 1 || msgs[0].Seq != 1001 {
			t.Fatalf("after pruning everything the next message is %+v, want sequence 1001", msgs)
		}
	})
}

// BenchmarkEmit records webhook messages, as event and GPS ingest do, a
// thousand to a transaction so that the commit does not hide their cost.
func BenchmarkEmit(b *testing.B) {
	f := newEventFixture(b)
	m := Message{Kind: MessageGPS, OrganizationID: f.org.ID, IMEI: f.dev.IMEI,
		GPS: []GPSPoint{{Time: eventT0, Lat: 52.37, Lon: 4.89, Speed: 48, Accuracy: 3.9}}}
	b.ReportAllocs()
	b.ResetTimer()
	for lo := 0; lo < b.N; lo += 1000 {
		f.update(func(tx *Tx) error {
			for range min(1000, b.N-lo) {
				if err := tx.Emit(m); err != nil {
					return err
				}
			}
			return nil
		})
	}
}
