package store_test

import (
	"context"
	"errors"
	"testing"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// A transaction whose caller gave up while it ran is rolled back, and the
// caller learns why.
func TestUpdateDoesNotCommitForADoneContext(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db, _ := openTest(t)
		tests := []struct {
			name string
			// during runs inside the transaction, after its write.
			during func(cancel context.CancelFunc)
			want   error
		}{
			{"canceled while running", func(cancel context.CancelFunc) { cancel() }, context.Canceled},
			{"canceled before it started", nil, context.Canceled},
		}
		for i, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tc.during == nil {
					cancel()
				}
				name := []string{"first", "second"}[i]
				err := db.Update(ctx, Actor{Source: "test"}, func(tx *Tx) error {
					if tx.Context() != ctx {
						t.Error("tx.Context is not the transaction's context")
					}
					if _, err := tx.CreatePartner(name); err != nil {
						return err
					}
					if tc.during != nil {
						tc.during(cancel)
					}
					return nil
				})
				if !errors.Is(err, tc.want) {
					t.Fatalf("Update = %v, want %v", err, tc.want)
				}
				if n := partnerCount(t, db); n != 0 {
					t.Fatalf("%d partners committed, want none", n)
				}
			})
		}
		// A deadline counts like a cancellation.
		ctx, cancel := context.WithTimeout(t.Context(), 0)
		defer cancel()
		<-ctx.Done()
		if err := db.View(ctx, func(*Tx) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("View after the deadline = %v", err)
		}
		// A live context commits.
		mustUpdate(t, db, func(tx *Tx) error { _, err := tx.CreatePartner("kept"); return err })
		if n := partnerCount(t, db); n != 1 {
			t.Fatalf("%d partners after a live write, want 1", n)
		}
	})
}

func partnerCount(t *testing.T, db *DB) int {
	t.Helper()
	n := 0
	if err := db.View(t.Context(), func(tx *Tx) error { n = tx.PartnerCount(); return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}
