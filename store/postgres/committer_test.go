package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/pgtest"
	"github.com/fleetcam/fleetcam/store/postgres"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// addDevices adds the devices imeis to a new organization of db, each
// with its GPS sample at, when given, and returns them.
func addDevices(t *testing.T, db *store.DB, at *store.GPSPoint, imeis ...string) []store.Device {
	t.Helper()
	devs := make([]store.Device, len(imeis))
	err := db.Update(context.Background(), store.Actor{Source: "cli"}, func(tx *store.Tx) error {
		p, err := tx.CreatePartner("Partner")
		if err != nil {
			return err
		}
		o, err := tx.CreateOrganization(p.ID, "Fleet", []byte("salt"))
		if err != nil {
			return err
		}
		for i, imei := range imeis {
			devs[i] = store.Device{IMEI: imei, Name: "cam", OrganizationID: o.ID, PartnerID: p.ID}
			if err := tx.AddDevice(&devs[i]); err != nil {
				return err
			}
			if at != nil {
				if _, err := tx.AddGPS(&devs[i], []store.GPSPoint{*at}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return devs
}

// TestGroupCommitsOfTwoProcessesConflict: two processes (two nodes of a
// cluster) record a new connection of one device in their group commits
// at the same moment, each after reading the one before. PostgreSQL aborts
// one for the conflict; its batch runs again, jobs and all, reads the
// other's connection and commits after it, and neither writer sees an
// error.
func TestGroupCommitsOfTwoProcessesConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbs := twoProcesses(t, store.Options{})
	imei := storetest.IMEI("35693810009000")
	addDevices(t, dbs[0], nil, imei)
	// Each job reads the link, then waits until both have read before it
	// writes, the first time it runs.
	var read sync.WaitGroup
	read.Add(2)
	prev := make([]string, 2)
	errs := make([]error, 2)
	var writers sync.WaitGroup
	for i, db := range dbs {
		c := db.NewCommitter(store.CommitterOptions{MaxBatch: 8})
		defer c.Close()
		conn := []string{"node-a/1", "node-b/2"}[i]
		first := true
		writers.Go(func() {
			errs[i] = c.Do(ctx, store.Actor{Source: "device"}, func(tx *store.Tx) error {
				dl, err := tx.DeviceLink(imei)
				if err != nil {
					return err
				}
				prev[i] = dl.ConnectionID
				if first {
					first = false
					read.Done()
					read.Wait()
				}
				dl.Presence, dl.ConnectionID = store.PresenceOnline, conn
				return tx.PutDeviceLink(dl)
			})
		})
	}
	writers.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	var last string
	dbs[0].View(ctx, func(tx *store.Tx) error {
		dl, err := tx.DeviceLink(imei)
		last = dl.ConnectionID
		return err
	})
	// The one committed last read the other's connection.
	switch {
	case last == "node-b/2" && prev[1] == "node-a/1" && prev[0] == "":
	case last == "node-a/1" && prev[0] == "node-b/2" && prev[1] == "":
	default:
		t.Fatalf("stored %s; the writers read %q before writing", last, prev)
	}
}

// twoProcesses opens two stores on one new database, as two nodes of a
// cluster do.
func twoProcesses(t *testing.T, o store.Options) [2]*store.DB {
	t.Helper()
	url := pgtest.Database(t, "")
	var dbs [2]*store.DB
	for i := range dbs {
		db, err := postgres.Open(context.Background(), url, postgres.Options{}, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	return dbs
}

// readTogether runs one job on the group commit of each of two processes
// at once, through submit, and fails the test on a job's error. A job
// calls read once it has read what it writes: the first time, read waits
// until the other job has read too, so that both read before either
// writes; later (a run again) it returns at once.
func readTogether(t *testing.T, dbs [2]*store.DB, submit func(i int, c *store.Committer, read func()) error) {
	t.Helper()
	var read sync.WaitGroup
	read.Add(len(dbs))
	var errs [2]error
	var writers sync.WaitGroup
	for i, db := range dbs {
		c := db.NewCommitter(store.CommitterOptions{MaxBatch: 8})
		defer c.Close()
		first := sync.OnceFunc(func() {
			read.Done()
			read.Wait()
		})
		writers.Go(func() { errs[i] = submit(i, c, first) })
	}
	writers.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
}

// TestGroupCommitTakesTheKnownLatestGPSOnItsFirstTryOnly: two processes'
// group commits each run a job of one device whose connection knows a
// latest GPS sample (Committer.DoKnowing), one the database does not hold.
// Both read and write the device's link, so PostgreSQL aborts one of
// them. A first transaction takes the known sample for the latest; the
// one run again reads the stored one, for the conflict might have come
// from what the connection knew.
func TestGroupCommitTakesTheKnownLatestGPSOnItsFirstTryOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	at := time.Date(2026, 3, 15, 9, 0, 0, 0, time.UTC)
	dbs := twoProcesses(t, store.Options{Now: func() time.Time { return at.Add(time.Hour) }})
	imei := storetest.IMEI("35693810009300")
	dev := addDevices(t, dbs[0], &store.GPSPoint{Time: at, Lat: 52, Lon: 4}, imei)[0]
	known := &store.LatestGPS{Point: store.GPSPoint{Time: at.Add(-time.Minute), Lat: 1, Lon: 4}, Ownership: dev.Ownership}
	actor := store.Actor{Source: "device", IMEI: imei, OrganizationID: dev.OrganizationID, PartnerID: dev.PartnerID}
	lats := make([][]float64, 2) // the known latest sample's latitude, by run
	readTogether(t, dbs, func(i int, c *store.Committer, read func()) error {
		return c.DoKnowing(ctx, actor, known, func(tx *store.Tx) error {
			dl, err := tx.DeviceLink(imei)
			if err != nil {
				return err
			}
			k, ok := tx.KnownLatestGPS(imei)
			if !ok {
				return errors.New("no latest GPS sample known")
			}
			lats[i] = append(lats[i], k.Point.Lat)
			read()
			dl.Presence, dl.ConnectionID = store.PresenceOnline, fmt.Sprintf("node-%d/1", i)
			return tx.PutDeviceLink(dl)
		})
	})
	once, twice := lats[0], lats[1]
	if len(once) > len(twice) {
		once, twice = twice, once
	}
	if !slices.Equal(once, []float64{1}) || !slices.Equal(twice, []float64{1, 52}) {
		t.Errorf("known latest samples by run %v; want one job's single run to take the known one (lat 1), the other's second run to read the stored one (lat 52)", lats)
	}
}

// TestGroupCommitOfTwoConnectionsOfADevice: two jobs of one device in one
// batch, from two connections of it (the earlier one ending), that know
// different latest GPS samples give the engine neither, and it reads the
// stored one; two that know the same give it that one.
func TestGroupCommitOfTwoConnectionsOfADevice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	at := time.Date(2026, 3, 15, 9, 0, 0, 0, time.UTC)
	db, err := postgres.Open(ctx, pgtest.Database(t, ""), postgres.Options{}, store.Options{Now: func() time.Time { return at.Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	imei := storetest.IMEI("35693810009400")
	dev := addDevices(t, db, &store.GPSPoint{Time: at, Lat: 52, Lon: 4}, imei)[0]
	actor := store.Actor{Source: "device", IMEI: imei, OrganizationID: dev.OrganizationID, PartnerID: dev.PartnerID}
	knows := func(lat float64, min int) *store.LatestGPS {
		return &store.LatestGPS{Point: store.GPSPoint{Time: at.Add(time.Duration(-min) * time.Minute), Lat: lat, Lon: 4}, Ownership: dev.Ownership}
	}
	for _, c := range []struct {
		name  string
		known [2]*store.LatestGPS
		want  float64
	}{
		{"different", [2]*store.LatestGPS{knows(1, 1), knows(2, 2)}, 52},
		{"the same", [2]*store.LatestGPS{knows(1, 1), knows(1, 1)}, 1},
	} {
		// A batch of two: the committer waits for the second job.
		cm := db.NewCommitter(store.CommitterOptions{MaxBatch: 2, Delay: time.Hour})
		var lats [2]float64
		var errs [2]error
		var jobs sync.WaitGroup
		for i, k := range c.known {
			jobs.Go(func() {
				errs[i] = cm.DoKnowing(ctx, actor, k, func(tx *store.Tx) error {
					if got, ok := tx.KnownLatestGPS(imei); ok {
						lats[i] = got.Point.Lat
					}
					return nil
				})
			})
		}
		jobs.Wait()
		cm.Close()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("%s: %v", c.name, errs)
		}
		if lats != [2]float64{c.want, c.want} {
			t.Errorf("%s: the jobs knew latest samples of lat %v; want %v", c.name, lats, c.want)
		}
	}
}

// TestGroupCommitsOfTwoProcessesOnDifferentDevices: two processes store
// GPS of two devices in their group commits at the same moment, each
// reading its device's latest sample (the GPS samples' index pages both
// read and write) before either writes. Neither transaction shares a row
// with the other, so neither runs again: a group commit does not pay for
// what another node's writes to neighbouring index entries look like.
func TestGroupCommitsOfTwoProcessesOnDifferentDevices(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbs := twoProcesses(t, store.Options{})
	imeis := []string{storetest.IMEI("35693810009100"), storetest.IMEI("35693810009200")}
	at := time.Date(2026, 3, 15, 9, 0, 0, 0, time.UTC)
	addDevices(t, dbs[0], &store.GPSPoint{Time: at, Lat: 52, Lon: 4}, imeis...)
	runs := make([]int, 2)
	readTogether(t, dbs, func(i int, c *store.Committer, read func()) error {
		return c.Do(ctx, store.Actor{Source: "device"}, func(tx *store.Tx) error {
			runs[i]++
			dev, err := tx.Device(imeis[i])
			if err != nil {
				return err
			}
			if _, err := tx.GPS(imeis[i], at, at.Add(time.Hour), 0); err != nil {
				return err
			}
			read()
			_, err = tx.AddGPS(dev, []store.GPSPoint{{Time: at.Add(time.Second), Lat: 52, Lon: 4}})
			return err
		})
	})
	if runs[0] != 1 || runs[1] != 1 {
		t.Errorf("the jobs ran %v times; want once each", runs)
	}
}

// TestGroupCommitAfterAFailedStatement runs three jobs in one batch, the
// second of which fails in the database (a device name with a NUL byte,
// which text cannot hold): PostgreSQL refuses every later statement of that
// transaction, yet only the second writer gets an error, and the first and
// third jobs are committed.
func TestGroupCommitAfterAFailedStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := postgres.Open(ctx, pgtest.Database(t, ""), postgres.Options{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var org, partner int64
	err = db.Update(ctx, store.Actor{Source: "cli"}, func(tx *store.Tx) error {
		p, err := tx.CreatePartner("Partner")
		if err != nil {
			return err
		}
		o, err := tx.CreateOrganization(p.ID, "Fleet", []byte("salt"))
		org, partner = o.ID, p.ID
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var batches []store.BatchStats
	var mu sync.Mutex
	c := db.NewCommitter(store.CommitterOptions{MaxBatch: 8, Delay: time.Hour, OnBatch: func(s store.BatchStats) {
		mu.Lock()
		batches = append(batches, s)
		mu.Unlock()
	}})
	imeis := []string{storetest.IMEI("35693810009100"), storetest.IMEI("35693810009200"), storetest.IMEI("35693810009300")}
	var done []<-chan error
	for i, imei := range imeis {
		name := "cam"
		if i == 1 {
			name = "cam\x00"
		}
		done = append(done, c.Submit(ctx, store.Actor{Source: "cli"}, func(tx *store.Tx) error {
			return tx.AddDevice(&store.Device{IMEI: imei, Name: name, OrganizationID: org, PartnerID: partner})
		}))
	}
	// Closing commits what is queued without waiting out the delay.
	go c.Close()
	for i, ch := range done {
		if err := <-ch; (err != nil) != (i == 1) || (err != nil && !errors.Is(err, store.ErrInvalid)) {
			t.Errorf("job %d: %v; want store.ErrInvalid for the second only", i, err)
		}
	}
	mu.Lock()
	if len(batches) != 1 || batches[0].Jobs != 3 || batches[0].Failed != 1 {
		t.Errorf("batches %+v; want one of 3 jobs with 1 failed", batches)
	}
	mu.Unlock()
	err = db.View(ctx, func(tx *store.Tx) error {
		for i, imei := range imeis {
			if _, err := tx.Device(imei); (err == nil) != (i != 1) {
				t.Errorf("device %d: %v", i, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
