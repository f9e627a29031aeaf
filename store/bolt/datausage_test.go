package bolt_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// Data usage periods are under imei, 0, period start (unix ms), as the
// older version stored them: its periods are read, newest first, beside new
// ones, and the device's removal drops them all.
func TestDataUsageKeys(t *testing.T) {
	f := newDeviceFixture(t)
	imei := f.dev.IMEI
	feb := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	mar := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	f.put("data_usage", deviceStateKey(imei, feb.UnixMilli()), fmt.Appendf(nil,
		`{"imei":%q,"periodStart":"2026-02-01T00:00:00Z","bytesUp":10,"bytesDown":20,"receivedAt":"2026-02-28T00:00:00Z"}`, imei))
	f.update(func(tx *store.Tx) error {
		return tx.RecordDataUsage(imei, store.DataUsage{PeriodStart: mar, BytesUp: 1, BytesDown: 2})
	})
	want := [][]byte{deviceStateKey(imei, feb.UnixMilli()), deviceStateKey(imei, mar.UnixMilli())}
	if got := f.keys("data_usage", []byte(imei)); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("data usage keys %q, want %q", got, want)
	}
	f.view(func(tx *store.Tx) error {
		ps, err := tx.DataUsage(imei, 0)
		if err != nil || len(ps) != 2 || !ps[0].PeriodStart.Equal(mar) || !ps[1].PeriodStart.Equal(feb) || ps[1].BytesDown != 20 {
			t.Errorf("periods %+v %v, want March then February", ps, err)
		}
		if ps, err := tx.DataUsage(imei, 1); err != nil || len(ps) != 1 || !ps[0].PeriodStart.Equal(mar) {
			t.Errorf("latest period %+v %v", ps, err)
		}
		return nil
	})
	f.update(func(tx *store.Tx) error { return tx.RemoveDevice(imei) })
	if got := f.keys("data_usage", []byte(imei)); len(got) != 0 {
		t.Errorf("periods of the removed device %q", got)
	}
}
