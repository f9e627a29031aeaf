package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// purge measures the retention purge of one day of data: a store with
// purgeDays days of GPS samples and events of purgeDevices devices, whose
// organization keeps purgeDays-1 days, so that exactly the oldest day is
// due. The store's own Purger (what fleetcam runs every
// retention.interval, maintenance step included) runs once in this
// process, its clock set to the end of the seeded days, on a fresh copy of
// the seeded store per run; the purge is timed from its call to its return
// and checked: the oldest day is gone, the rest is all there.
func (b *bench) purge(ctx context.Context) error {
	sc := b.sc
	fl, err := b.seeded(ctx, "purge", sc.purgeDevices)
	if err != nil {
		return err
	}
	defer b.dropStorage(ctx, fl.st)
	// Whole UTC days, the newest ending at midnight before now.
	end := time.Now().UTC().Truncate(24 * time.Hour)
	start := end.AddDate(0, 0, -sc.purgeDays)
	cutoff := end.AddDate(0, 0, -(sc.purgeDays - 1))
	perDay := int((24 * time.Hour) / sc.purgeGPSEvery)
	t0 := time.Now()
	if err := seedGPS(ctx, fl, start, end, sc.purgeGPSEvery); err != nil {
		return err
	}
	gpsTook := time.Since(t0)
	events := sc.purgeDevices * sc.purgeEventsPerDay * sc.purgeDays
	t0 = time.Now()
	if err := seedEvents(ctx, fl, events, sc.purgeDays, end, b.log); err != nil {
		return err
	}
	eventsTook := time.Since(t0)
	samples := sc.purgeDevices * perDay * sc.purgeDays
	fmt.Fprintf(b.log, "  seeded %d GPS samples in %s, %d events in %s\n", samples, gpsTook.Round(time.Millisecond),
		events, eventsTook.Round(time.Millisecond))
	if err := b.settleStore(ctx, fl.st); err != nil {
		return err
	}
	if err := setPurgeDays(ctx, fl, sc.purgeDays-1); err != nil {
		return err
	}

	t := &table{title: fmt.Sprintf("7. Retention purge of one day: %d devices, %d days of GPS (1 fix/%s) and events, the oldest day due",
		sc.purgeDevices, sc.purgeDays, sc.purgeGPSEvery), cols: []string{"run", "purge", "GPS deleted", "events deleted", "transactions"}}
	var secs []float64
	for run := 1; run <= b.o.runs; run++ {
		cp, err := b.copyStorage(ctx, fl.st, "purge-run"+strconv.Itoa(run))
		if err != nil {
			return fmt.Errorf("run %d: copy the seeded store: %w", run, err)
		}
		var profiled func()
		if run == 1 {
			profiled = b.profilePurge(ctx)
		}
		res, took, err := timePurge(ctx, cp, end)
		if profiled != nil {
			profiled()
		}
		if err == nil {
			err = checkPurged(ctx, cp, fl.imeis, start, cutoff, end, sc.purgeGPSEvery)
		}
		if derr := b.dropStorage(ctx, cp); err == nil {
			err = derr
		}
		if err != nil {
			return fmt.Errorf("run %d: %w", run, err)
		}
		secs = append(secs, took.Seconds())
		t.add(strconv.Itoa(run), took.Round(time.Millisecond).String(), strconv.Itoa(res.Deleted["gps"]),
			strconv.Itoa(res.Deleted["events"]), strconv.Itoa(res.Transactions))
		fmt.Fprintf(b.log, "    run %d: purged in %s\n", run, took.Round(time.Millisecond))
	}
	med := median(secs)
	verdict := ""
	if b.engine == enginePostgres {
		verdict = b.rep.target("purge", "day_purge_seconds", med, "s", false, 1)
	} else {
		b.rep.figure("purge", "day_purge_seconds", med, "s")
	}
	b.rep.runs(secs)
	b.rep.figure("purge", "day_gps_samples", float64(sc.purgeDevices*perDay), "samples")
	b.rep.figure("purge", "day_events", float64(sc.purgeDevices*sc.purgeEventsPerDay), "events")
	if verdict != "" {
		verdict = ": " + verdict
	}
	t.note("median %.3f s over %d runs, each on a fresh copy of the seeded store%s", med, len(secs), verdict)
	t.note("due: %d GPS samples and %d events (the day from %s); kept: %d days; seeded in %s (GPS) and %s (events)",
		sc.purgeDevices*perDay, sc.purgeDevices*sc.purgeEventsPerDay, start.Format(time.DateOnly), sc.purgeDays-1,
		gpsTook.Round(time.Second), eventsTook.Round(time.Second))
	t.note("the store's Purger (maintenance step, then every kind in batches of %d) in this process, clock at %s; afterwards the due day of every device is gone and the kept days are whole",
		store.DefaultPurgeBatch, end.Format(time.RFC3339))
	b.rep.table(t)
	return nil
}

// profilePurge starts, with -profile, a CPU profile of this process (the
// purge runs in it) and on PostgreSQL the server's statement statistics;
// the function it returns saves both. Nil without -profile.
func (b *bench) profilePurge(ctx context.Context) func() {
	if !b.o.profile {
		return nil
	}
	name := "purge"
	if len(b.engines) > 1 {
		name += "-" + b.engine
	}
	pgStats := b.engine == enginePostgres && b.pg.stats
	if pgStats {
		if err := b.pg.resetStats(ctx); err != nil {
			fmt.Fprintf(b.log, "fleetbench: statement statistics: %v\n", oneLine(err))
			pgStats = false
		}
	}
	path := filepath.Join(b.work, name+".pprof")
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(b.log, "fleetbench: profile %s: %v\n", name, err)
		f = nil
	}
	began := time.Now()
	return func() {
		if f != nil {
			pprof.StopCPUProfile()
			f.Close()
			fmt.Fprintf(b.log, "fleetbench: CPU profile of the purge %s (go tool pprof -top %s)\n", path, path)
		}
		if pgStats {
			b.pg.writeStats(ctx, time.Since(began), filepath.Join(b.work, name+"-statements.txt"), b.log)
		}
	}
}

// seedGPS stores a sample every every from start to end (exclusive) for
// each device of f, each device's in one call of the store's GPS ingest,
// in bulk transactions (store.DB.BulkUpdate) of about 50,000 samples, and
// checks that every sample was stored.
func seedGPS(ctx context.Context, f *fleet, start, end time.Time, every time.Duration) error {
	db, err := f.st.open(ctx, store.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	n := int(end.Sub(start) / every)
	const chunk = 50_000
	perTx := max(1, chunk/max(n, 1))
	for lo := 0; lo < len(f.imeis); lo += perTx {
		devices := lo
		err := db.BulkUpdate(ctx, store.Actor{Source: "device"}, func(tx *store.Tx) error {
			pts := make([]store.GPSPoint, 0, n)
			for i := lo; i < min(lo+perTx, len(f.imeis)); i++ {
				devices = i
				dev, err := tx.Device(f.imeis[i])
				if err != nil {
					return err
				}
				pts = pts[:0]
				for k := range n {
					pts = append(pts, store.GPSPoint{Time: start.Add(time.Duration(k) * every),
						Lat: 52.3 + float64((i+k)%1000)/1e4, Lon: 4.8 + float64((i*7+k)%1000)/1e4, Speed: float64(k % 120), Accuracy: 5})
				}
				added, err := tx.AddGPS(dev, pts)
				if err == nil && len(added) != len(pts) {
					err = fmt.Errorf("%d of %d samples stored", len(added), len(pts))
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("seed GPS of %s: %w", f.imeis[devices], err)
		}
	}
	return nil
}

// setPurgeDays sets the purge days of f's organization.
func setPurgeDays(ctx context.Context, f *fleet, days int) error {
	db, err := f.st.open(ctx, store.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(ctx, store.Actor{Source: "cli"}, func(tx *store.Tx) error {
		o, err := tx.Organization(f.orgID)
		if err != nil {
			return err
		}
		o.Retention.PurgeDays = days
		return tx.UpdateOrganization(o)
	})
}

// timePurge opens st with its clock at now and times one run of the
// store's Purger.
func timePurge(ctx context.Context, st storage, now time.Time) (store.PurgeResult, time.Duration, error) {
	db, err := st.open(ctx, store.Options{Now: func() time.Time { return now }})
	if err != nil {
		return store.PurgeResult{}, 0, err
	}
	defer db.Close()
	p := store.NewPurger(db, store.PurgerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	began := time.Now()
	res, err := p.RunOnce(ctx)
	return res, time.Since(began), err
}

// checkPurged checks a purged store: no device has a GPS sample or an
// event before cutoff, and each has every sample from cutoff to end.
func checkPurged(ctx context.Context, st storage, imeis []string, start, cutoff, end time.Time, every time.Duration) error {
	db, err := st.open(ctx, store.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	want := int(end.Sub(cutoff) / every)
	return db.View(ctx, func(tx *store.Tx) error {
		for _, imei := range imeis {
			due, err := tx.GPS(imei, start, cutoff.Add(-time.Millisecond), 1)
			if err != nil {
				return err
			}
			kept, err := tx.GPS(imei, cutoff, end, 0)
			if err != nil {
				return err
			}
			_, dueEvents, err := tx.DeviceEvents(imei, start, cutoff.Add(-time.Millisecond), store.Page{Limit: 1})
			if err != nil {
				return err
			}
			_, keptEvents, err := tx.DeviceEvents(imei, cutoff, end, store.Page{Limit: 1})
			if err != nil {
				return err
			}
			switch {
			case len(due) > 0 || dueEvents > 0:
				return fmt.Errorf("after the purge %s still has %d GPS samples and %d events of the due day", imei, len(due), dueEvents)
			case len(kept) != want:
				return fmt.Errorf("after the purge %s has %d GPS samples of the kept days, want %d", imei, len(kept), want)
			case keptEvents == 0:
				return fmt.Errorf("after the purge %s has no event of the kept days", imei)
			}
		}
		return nil
	})
}
