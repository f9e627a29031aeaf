package postgres

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/pgtest"
)

// TestWebhookPartitions writes audit entries, messages and deliveries
// before their months have partitions, then creates the partitions of the
// months around a time from three engines at once: each row of those
// months moves to its month's partition with its id, rows of other months
// stay in the default partition, and the partitions are made once.
func TestWebhookPartitions(t *testing.T) {
	url := pgtest.Database(t, "")
	e := openEngine(t, url)
	ctx := context.Background()
	if err := e.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	dropMonthPartitions(t, e)
	f := seedWebhooks(t, e)
	now := time.Date(2026, 7, 15, 9, 0, 0, 0, time.UTC)
	inWindow := time.Date(2026, 5, 3, 0, 0, 0, 0, time.UTC)   // two months back: the first of the window
	ahead := time.Date(2026, 10, 31, 23, 59, 59, 0, time.UTC) // three months ahead: the last
	beyond := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

	audit := map[time.Time]*store.AuditEntry{}
	msgs := map[time.Time]*store.Message{}
	dels := map[time.Time]*store.Delivery{}
	write(t, e, func(t2 *tx) error {
		for _, at := range []time.Time{inWindow, ahead, beyond} {
			audit[at] = &store.AuditEntry{Time: at, Action: "a", EntityType: "e", EntityID: "1", OrganizationID: f.org}
			msgs[at] = &store.Message{Kind: store.MessageGPS, OrganizationID: f.org, Time: at}
			dels[at] = pendingDelivery(f.org, "https://r.example.com", "", at)
			if err := t2.AuditEntries().Append(audit[at]); err != nil {
				return err
			}
			if err := t2.Messages().Append(msgs[at]); err != nil {
				return err
			}
			if err := t2.Deliveries().Insert(dels[at]); err != nil {
				return err
			}
		}
		return nil
	})

	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		other := openEngine(t, url)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = ensureWebhookPartitions(ctx, other, now)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("engine %d: %v", i, err)
		}
	}

	months := []string{"y2026m05", "y2026m06", "y2026m07", "y2026m08", "y2026m09", "y2026m10"}
	for _, s := range webhookSeries {
		rows, err := e.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent = $1::regclass ORDER BY c.relname`, s.table)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				t.Fatal(err)
			}
			got = append(got, name)
		}
		rows.Close()
		want := []string{s.table + "_default"}
		for _, m := range months {
			want = append(want, s.table+"_"+m)
		}
		if !slices.Equal(got, want) {
			t.Errorf("partitions of %s: %v; want %v", s.table, got, want)
		}
	}

	where := map[time.Time]string{inWindow: "_y2026m05", ahead: "_y2026m10", beyond: "_default"}
	for at, suffix := range where {
		for table, id := range map[string]int64{"audit_log": audit[at].ID, "messages": msgs[at].Seq, "webhook_deliveries": dels[at].ID} {
			key := map[string]string{"audit_log": "id", "messages": "seq", "webhook_deliveries": "id"}[table]
			var got string
			err := e.pool.QueryRow(ctx, `SELECT tableoid::regclass::text FROM `+table+` WHERE `+key+` = $1`, id).Scan(&got)
			if err != nil || got != table+suffix {
				t.Errorf("the %s row of %s is in %q, %v; want %s", table, at, got, err, table+suffix)
			}
		}
	}
	// The records read as before.
	read(t, e, func(t2 *tx) error {
		got, err := t2.Messages().After(0, 0)
		if err != nil || len(got) != 3 || got[0].Seq != msgs[inWindow].Seq || !got[0].Time.Equal(inWindow) {
			t.Errorf("messages after the move: %+v, %v", got, err)
		}
		d, err := t2.Deliveries().Get(dels[ahead].ID)
		if err != nil || !d.CreatedAt.Equal(ahead) {
			t.Errorf("delivery after the move: %+v, %v", d, err)
		}
		return nil
	})
	// New rows take ids after the moved ones.
	m := store.Message{Kind: store.MessageGPS, OrganizationID: f.org, Time: now}
	write(t, e, func(t2 *tx) error { return t2.Messages().Append(&m) })
	if m.Seq <= msgs[beyond].Seq {
		t.Errorf("sequence %d after the move; want above %d", m.Seq, msgs[beyond].Seq)
	}
}
