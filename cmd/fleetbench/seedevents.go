package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// seedTypes are the event types the seeded history rotates through.
var seedTypes = []string{"deceleration", "acceleration", "sharpTurnLeft", "sharpRightTurn", "gsensorRegular", "button", "tailgating", "cellPhoneUse"}

// seedEvents stores n events of f's devices, spread evenly over the days
// before end, with the store's event ingest in bulk transactions
// (store.DB.BulkUpdate: the rules and records of any transaction, written
// by COPY on PostgreSQL) of seedChunk events, saying how far it got on
// progress (when not nil) after each, and checks that the organization
// then has n events in those days. Events go to the devices in turn, so every device has a
// time-ordered history. The webhook messages the events emit count as
// delivered long ago: the webhook cursor is moved past them.
func seedEvents(ctx context.Context, f *fleet, n, days int, end time.Time, progress io.Writer) error {
	db, err := f.st.open(ctx, store.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	start := end.Add(-time.Duration(days) * 24 * time.Hour)
	step := end.Sub(start) / time.Duration(n)
	chunk := seedChunk(f.st.engine)
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		err := db.BulkUpdate(ctx, store.Actor{Source: "cli"}, func(tx *store.Tx) error {
			devs := make(map[string]*store.Device, len(f.imeis))
			for i := lo; i < hi; i++ {
				imei := f.imeis[i%len(f.imeis)]
				dev := devs[imei]
				if dev == nil {
					var err error
					if dev, err = tx.Device(imei); err != nil {
						return err
					}
					devs[imei] = dev
				}
				in := store.EventInput{DeviceEventID: "S" + strconv.Itoa(i), Type: seedTypes[i%len(seedTypes)],
					Time: start.Add(time.Duration(i) * step), Lat: 52.37 + float64(i%1000)/1e4, Lon: 4.89 + float64(i%777)/1e4,
					Speed: float64(10 + i%90), Accuracy: 4,
					Samples: []store.MetadataSample{{X: -0.4, Y: -5.8, Z: 9.8, Time: start.Unix() + int64(i), Speed: 12}}}
				r, err := tx.IngestEvent(dev, in)
				if err != nil {
					return err
				}
				if !r.Created {
					return fmt.Errorf("seed event %d (%s) not created: %s", i, in.Type, r.Dropped)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("seed events %d–%d: %w", lo, hi, err)
		}
		if progress != nil && hi < n {
			fmt.Fprintf(progress, "    … %d/%d events seeded\n", hi, n)
		}
	}
	err = db.View(ctx, func(tx *store.Tx) error {
		_, total, err := tx.OrgEvents(f.orgID, store.EventQuery{Start: start, End: end}, store.Page{Limit: 1})
		if err == nil && total != n {
			err = fmt.Errorf("the organization has %d events after seeding %d", total, n)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("seed events: %w", err)
	}
	return skipSeededMessages(ctx, db, n)
}

// seedChunk is how many events one transaction of seedEvents stores on
// engine: bbolt keeps the pages a transaction changed in memory until it
// commits, and its writes slow down as they grow (250,000 events take four
// times as long as five transactions of 50,000); a bulk transaction on
// PostgreSQL reads each device's stored event ids once, so that fewer,
// longer ones read fewer.
func seedChunk(engine string) int {
	if engine == enginePostgres {
		return 250_000
	}
	return 50_000
}

// skipSeededMessages moves the webhook cursor past every message in the
// store, at least n of which were emitted, and prunes them as the webhook
// dispatcher would have long ago.
func skipSeededMessages(ctx context.Context, db *store.DB, n int) error {
	var last int64
	from := int64(max(n-1000, 0))
	for {
		var msgs []store.Message
		err := db.View(ctx, func(tx *store.Tx) error {
			var err error
			msgs, err = tx.MessagesAfter(from, 1000)
			return err
		})
		if err != nil {
			return err
		}
		if len(msgs) == 0 {
			break
		}
		last = msgs[len(msgs)-1].Seq
		from = last
	}
	if last == 0 && n > 1000 {
		return fmt.Errorf("seed events: no webhook message after sequence %d", n-1000)
	}
	if err := db.Update(ctx, store.Actor{Source: "cli"}, func(tx *store.Tx) error { return tx.SetWebhookCursor(last) }); err != nil {
		return err
	}
	for more := true; more; {
		err := db.Update(ctx, store.Actor{Source: "cli"}, func(tx *store.Tx) error {
			var err error
			_, more, err = tx.PruneMessages(50_000)
			return err
		})
		if err != nil {
			return fmt.Errorf("seed events: prune webhook messages: %w", err)
		}
	}
	return nil
}
