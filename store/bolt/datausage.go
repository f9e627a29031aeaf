package bolt

import (
	"bytes"
	"encoding/binary"

	"github.com/fleetcam/fleetcam/store"
)

// dataUsagePeriods are the data_usage records: JSON under imei, 0, period
// start (unix ms, 8 bytes), so a device's periods are one range, oldest
// first.
type dataUsagePeriods struct{ t *tx }

// DataUsagePeriods implements store.DeviceStateRecords.
func (t *tx) DataUsagePeriods() store.DataUsagePeriodRecords { return dataUsagePeriods{t} }

// Put implements store.DataUsagePeriodRecords.
func (r dataUsagePeriods) Put(p *store.DataUsagePeriod) error {
	k := binary.BigEndian.AppendUint64(compositeKey(p.IMEI, ""), uint64(max(p.PeriodStart.UnixMilli(), 0)))
	return putJSON(r.t.bucket(bucketDataUsage), k, p)
}

// Latest implements store.DataUsagePeriodRecords.
func (r dataUsagePeriods) Latest(imei string, n int) ([]store.DataUsagePeriod, error) {
	var out []store.DataUsagePeriod
	prefix := compositeKey(imei, "")
	c := r.t.bucket(bucketDataUsage).Cursor()
	end := append(bytes.Clone(prefix), 0xff)
	for k, v := seekBefore(c, end); k != nil && bytes.HasPrefix(k, prefix) && (n <= 0 || len(out) < n); k, v = c.Prev() {
		p, err := decodeJSON(k, v, store.DataUsagePeriod{})
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, nil
}

// DeleteDevice implements store.DataUsagePeriodRecords.
func (r dataUsagePeriods) DeleteDevice(imei string) error {
	return deletePrefix(r.t.bucket(bucketDataUsage), compositeKey(imei, ""))
}

// Purge implements store.DataUsagePeriodRecords.
func (r dataUsagePeriods) Purge(p store.SeriesPurge) (int, []byte, error) {
	return purgeSeries(r.t.bucket(bucketDataUsage), p, func([]byte) int64 { return 0 }, nil)
}
