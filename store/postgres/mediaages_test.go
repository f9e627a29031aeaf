package postgres

import (
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestMediaAgesTakeDueAsksOncePerBatch: the media purge walks the devices
// with entries of its class in IMEI order and asks for each one's cutoffs
// once a batch, the batch that resumes on a device too (the engine suite,
// store/enginetest, tests what it takes).
func TestMediaAgesTakeDueAsksOncePerBatch(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	a, b, c := f.imeis[0], f.imeis[1], f.imeis[2]
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const front = store.MediaClass('f')
	f.update(func(tx *tx) error {
		for i, imei := range []string{a, a, a, b, c} {
			ref := store.MediaRef{IMEI: imei, CameraID: 1, FileType: store.FileVideo, FileID: string(rune('a' + i))}
			if err := tx.MediaAges().Add(store.MediaAge{Ref: ref, Class: front, RecordedAt: day0.AddDate(0, 0, i)}); err != nil {
				return err
			}
		}
		return nil
	})
	owners := map[string]*store.OwnerCutoffs{
		a: ownerCutoffs(t, store.Cutoffs{10: day0.AddDate(0, 0, 10)}, map[int64]int64{0: 10}),
		b: ownerCutoffs(t, store.Cutoffs{10: day0.AddDate(0, 0, 1)}, map[int64]int64{0: 10}),
	}
	var asked [][]string
	purgeAll(t, f.e, 2, func(tx *tx, from []byte) (int, []byte, error) {
		var batch []string
		_, n, next, err := tx.MediaAges().TakeDue(front, deviceStatePurge(owners, &batch, from, 2))
		asked = append(asked, batch)
		return n, next, err
	})
	// a's first two entries, then its third, b (nothing due) and c (no
	// cutoffs).
	if want := [][]string{{a}, {a, b, c}}; !slices.EqualFunc(asked, want, slices.Equal) {
		t.Errorf("the batches asked for the cutoffs of %q; want %q", asked, want)
	}
}
