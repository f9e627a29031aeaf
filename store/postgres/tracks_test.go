package postgres

import (
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// trackNow is the time the tests of the tracks group run at: the
// partitions of gps_samples are those around it.
var trackNow = time.Date(2026, 3, 15, 9, 0, 0, 0, time.UTC)

// trackEngine returns an engine on a new database with the schema applied
// and the partitions of gps_samples around trackNow.
func trackEngine(t testing.TB) *Engine {
	t.Helper()
	e := openPrepared(t)
	ensureAround(t, e, trackNow, "gps_samples")
	return e
}

// tracksFixture is the directory seedTracks inserts: organizations A and
// B of one partner, and devices of each.
type tracksFixture struct {
	orgA, orgB int64
	// imeis are devices 0 and 1 of A, 2 of B.
	imeis []string
}

// seedTracks inserts the directory rows the tracks refer to.
func seedTracks(t *testing.T, e *Engine) tracksFixture {
	t.Helper()
	s := seeder{t, e, trackNow}
	partner := s.partner("P").ID
	org := func(name string) int64 {
		return s.organization(store.Organization{Name: name, PartnerID: partner, Retention: store.Retention{PurgeDays: 31}}).ID
	}
	f := tracksFixture{orgA: org("A"), orgB: org("B")}
	for i, o := range []int64{f.orgA, f.orgA, f.orgB} {
		imei := "35100000000000" + string(rune('0'+i))
		s.device(store.Device{IMEI: imei, OrganizationID: o, PartnerID: partner, Ownership: int64(i + 1)})
		f.imeis = append(f.imeis, imei)
	}
	return f
}

// purgeAll runs purge in batches of limit until it ends, each in its own
// transaction, checking that no batch deletes more than limit, and returns
// how many it deleted and in how many batches.
func purgeAll(t *testing.T, e *Engine, limit int, purge func(*tx, []byte) (int, []byte, error)) (deleted, batches int) {
	t.Helper()
	var from []byte
	for {
		var n int
		write(t, e, func(r *tx) error {
			var err error
			n, from, err = purge(r, from)
			return err
		})
		batches++
		deleted += n
		if limit > 0 && n > limit {
			t.Fatalf("a batch of limit %d deleted %d", limit, n)
		}
		if from == nil {
			return deleted, batches
		}
		if batches > 1000 {
			t.Fatal("the purge does not end")
		}
	}
}
