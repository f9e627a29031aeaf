package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// TestGPSSampleInItsDaysPartition: a sample goes in the partition of its
// day (the engine suite, store/enginetest, tests the samples themselves).
func TestGPSSampleInItsDaysPartition(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	imei := f.imeis[0]
	write(t, e, func(r *tx) error {
		_, err := insertOne(r, imei, 4, gpsAt(trackNow, 7))
		return err
	})
	var partition string
	if err := e.pool.QueryRow(context.Background(), `SELECT tableoid::regclass::text FROM gps_samples WHERE imei = $1`,
		imei).Scan(&partition); err != nil || partition != "gps_samples_y2026m03d15" {
		t.Errorf("the sample is in %q, %v; want gps_samples_y2026m03d15", partition, err)
	}
}

// TestGPSPurgeRefusesAWrongPosition: a resume position that is not one of
// PostgreSQL's is store.ErrInvalid.
func TestGPSPurgeRefusesAWrongPosition(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	owners := map[string]*store.OwnerCutoffs{f.imeis[0]: ownerCutoffs(t, store.Cutoffs{f.orgA: trackNow}, map[int64]int64{1: f.orgA})}
	err := e.update(context.Background(), func(r *tx) error {
		_, _, err := r.GPSSamples().Purge(seriesPurge(owners, []byte("351000000000000"), 4))
		return err
	})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a purge from a wrong position: %v; want ErrInvalid", err)
	}
}

// insertOne stores the one sample p of imei and reports whether it did.
func insertOne(r *tx, imei string, ownership int64, p store.GPSPoint) (bool, error) {
	stored, err := r.GPSSamples().Insert(imei, ownership, []store.GPSPoint{p})
	if err != nil {
		return false, err
	}
	return stored[0], nil
}
