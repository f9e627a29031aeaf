package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func openTestDB(t *testing.T) *DB {
	t.Helper()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	return storetest.Open(t, storetest.WithClock(func() time.Time { return now }))
}

func linkExists(t *testing.T, db *DB, imei string) bool {
	t.Helper()
	// A device never linked reads as offline; the jobs here store links
	// with no presence or online.
	found := false
	err := db.View(t.Context(), func(tx *Tx) error {
		l, err := tx.DeviceLink(imei)
		found = err == nil && l.Presence != PresenceOffline
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func TestCommitterBatchesConcurrentWriters(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db := openTestDB(t)
		var mu sync.Mutex
		var stats []BatchStats
		c := db.NewCommitter(CommitterOptions{MaxBatch: 64, Delay: 5 * time.Millisecond, OnBatch: func(b BatchStats) {
			mu.Lock()
			stats = append(stats, b)
			mu.Unlock()
		}})
		defer c.Close()
		const writers = 50
		var wg sync.WaitGroup
		for i := 0; i < writers; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				imei := fmt.Sprintf("dev-%02d", i)
				if err := c.Do(t.Context(), Actor{Source: "device"}, func(tx *Tx) error {
					return tx.PutDeviceLink(&DeviceLink{IMEI: imei, Presence: PresenceOnline})
				}); err != nil {
					t.Error(err)
				}
				// Released only after the commit: the write is visible at once.
				if !linkExists(t, db, imei) {
					t.Errorf("%s not stored when Do returned", imei)
				}
			}(i)
		}
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		jobs := 0
		for _, s := range stats {
			jobs += s.Jobs
		}
		if jobs != writers || len(stats) >= writers {
			t.Fatalf("%d jobs in %d transactions, want %d jobs in fewer transactions", jobs, len(stats), writers)
		}
	})
}

func TestCommitterFailedJobDoesNotFailItsBatch(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db := openTestDB(t)
		var stats BatchStats
		c := db.NewCommitter(CommitterOptions{MaxBatch: 8, Delay: 50 * time.Millisecond, OnBatch: func(b BatchStats) { stats = b }})
		errBad := errors.New("bad job")
		jobs := []struct {
			imei string
			fn   func(*Tx) error
			want error
		}{
			{"a", nil, nil},
			{"bad", func(tx *Tx) error {
				if err := tx.PutDeviceLink(&DeviceLink{IMEI: "bad"}); err != nil {
					return err
				}
				return errBad // after writing: the write must not survive
			}, errBad},
			{"b", nil, nil},
			{"panics", func(tx *Tx) error { panic("boom") }, nil},
			{"c", nil, nil},
		}
		results := make([]<-chan error, len(jobs))
		for i, j := range jobs {
			fn := j.fn
			if fn == nil {
				imei := j.imei
				fn = func(tx *Tx) error { return tx.PutDeviceLink(&DeviceLink{IMEI: imei}) }
			}
			results[i] = c.Submit(t.Context(), Actor{Source: "device"}, fn)
		}
		for i, j := range jobs {
			err := <-results[i]
			switch {
			case j.imei == "panics":
				if err == nil {
					t.Error("panicking job reported success")
				}
			case !errors.Is(err, j.want):
				t.Errorf("job %s: %v, want %v", j.imei, err, j.want)
			}
		}
		c.Close()
		for _, imei := range []string{"a", "b", "c"} {
			if !linkExists(t, db, imei) {
				t.Errorf("good job %s lost with a failing neighbour", imei)
			}
		}
		if linkExists(t, db, "bad") {
			t.Error("the failed job's partial write was committed")
		}
		if stats.Jobs != 5 || stats.Failed != 2 || stats.Attempts < 2 {
			t.Errorf("batch stats %+v", stats)
		}
		if err := c.Do(t.Context(), Actor{}, func(*Tx) error { return nil }); !errors.Is(err, ErrCommitterClosed) {
			t.Errorf("after Close: %v", err)
		}
	})
}

func TestCommitterWakesOutboxWatchers(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db := openTestDB(t)
		sig, stop := db.OutboxSignal()
		defer stop()
		c := db.NewCommitter(CommitterOptions{MaxBatch: 8})
		defer c.Close()
		if err := c.Do(t.Context(), Actor{Source: "device"}, func(tx *Tx) error {
			return tx.PutDeviceLink(&DeviceLink{IMEI: "dev-1", Presence: PresenceOnline})
		}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-sig:
			t.Fatal("outbox watchers woken by a commit that emitted no message")
		default:
		}
		if err := c.Do(t.Context(), Actor{Source: "device"}, func(tx *Tx) error {
			if err := ensureOrganization(tx); err != nil {
				return err
			}
			return tx.Emit(Message{Kind: MessageEvent, OrganizationID: 1, IMEI: "dev-1", Event: &EventFact{ID: 1}})
		}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-sig:
		case <-time.After(2 * time.Minute):
			t.Fatal("a group commit that emitted a message did not wake the outbox watchers")
		}
	})
}

// A writer whose context ends before its batch commits finds its write
// left out, and the rest of the batch committed.
func TestCommitterLeavesOutJobsOfDoneContexts(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db := openTestDB(t)
		c := db.NewCommitter(CommitterOptions{MaxBatch: 8})
		defer c.Close()
		gone, cancelGone := context.WithCancel(t.Context())
		cancelGone()
		late, cancelLate := context.WithCancel(t.Context())
		defer cancelLate()
		// The first job holds the writer until the others are queued, so that
		// all of them share one batch.
		hold := make(chan struct{})
		first := c.Submit(t.Context(), Actor{Source: "device"}, func(tx *Tx) error {
			<-hold
			return tx.PutDeviceLink(&DeviceLink{IMEI: "first"})
		})
		results := map[string]<-chan error{
			"gone": c.Submit(gone, Actor{Source: "device"}, func(tx *Tx) error {
				return tx.PutDeviceLink(&DeviceLink{IMEI: "gone"})
			}),
			// Its context ends after it ran, before the batch commits.
			"late": c.Submit(late, Actor{Source: "device"}, func(tx *Tx) error {
				cancelLate()
				return tx.PutDeviceLink(&DeviceLink{IMEI: "late"})
			}),
			"kept": c.Submit(t.Context(), Actor{Source: "device"}, func(tx *Tx) error {
				return tx.PutDeviceLink(&DeviceLink{IMEI: "kept"})
			}),
		}
		close(hold)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		for imei, want := range map[string]error{"gone": context.Canceled, "late": context.Canceled, "kept": nil} {
			if err := <-results[imei]; !errors.Is(err, want) {
				t.Errorf("job %s: %v, want %v", imei, err, want)
			}
			if stored := linkExists(t, db, imei); stored != (want == nil) {
				t.Errorf("job %s stored: %v", imei, stored)
			}
		}
		if !linkExists(t, db, "first") {
			t.Error("the first job was not stored")
		}
	})
}

// TestCommitterSplitsABatchThatKeepsConflicting: a transaction that keeps
// losing serialisation conflicts (here: one job conflicts whenever a
// certain other job shares its transaction, as the group commits of two
// nodes meeting on the same pages do) is split until the two are apart;
// every job commits, in order, and none fails.
func TestCommitterSplitsABatchThatKeepsConflicting(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db := openTestDB(t)
		var stats BatchStats
		c := db.NewCommitter(CommitterOptions{MaxBatch: 8, Delay: 50 * time.Millisecond, OnBatch: func(b BatchStats) { stats = b }})
		var (
			mu    sync.Mutex
			with  Records // the transaction the first job ran in
			order []string
		)
		job := func(imei string) func(*Tx) error {
			return func(tx *Tx) error {
				mu.Lock()
				switch {
				case imei == "first":
					with = TxRecords(tx)
				case imei == "last" && with == TxRecords(tx):
					mu.Unlock()
					return fmt.Errorf("%w: meets the first job", ErrTxConflict)
				}
				order = append(order, imei)
				mu.Unlock()
				return tx.PutDeviceLink(&DeviceLink{IMEI: imei})
			}
		}
		names := []string{"first", "b", "c", "d", "last"}
		results := make([]<-chan error, len(names))
		for i, imei := range names {
			results[i] = c.Submit(t.Context(), Actor{Source: "device"}, job(imei))
		}
		for i, imei := range names {
			if err := <-results[i]; err != nil {
				t.Errorf("job %s: %v", imei, err)
			}
		}
		c.Close()
		for _, imei := range names {
			if !linkExists(t, db, imei) {
				t.Errorf("job %s was not committed", imei)
			}
		}
		if stats.Jobs != 5 || stats.Splits == 0 || stats.Failed != 0 || stats.Err != nil {
			t.Errorf("batch stats %+v, want a split and no failure", stats)
		}
		mu.Lock()
		defer mu.Unlock()
		if last := order[len(order)-1]; last != "last" {
			t.Errorf("jobs ran in the order %v; the last job's write must come last", order)
		}
	})
}
