package store

import (
	"bytes"
	"time"
)

// Data usage: devices report the cellular data they used since the start of
// their billing period with each health report. The latest report of each
// period is kept, so the record of a period is its running total.

// DataUsagePeriod is one device's cellular usage in one billing period.
type DataUsagePeriod struct {
	IMEI        string    `json:"imei"`
	PeriodStart time.Time `json:"periodStart"`
	BytesUp     int64     `json:"bytesUp"`
	BytesDown   int64     `json:"bytesDown"`
	ReceivedAt  time.Time `json:"receivedAt"`
}

// dropDataUsage drops the data usage periods of a removed device.
func dropDataUsage(tx *Tx, d *Device) error {
	prefix := compositeKey(d.IMEI, "")
	c := tx.bucket(bucketDataUsage).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// RecordDataUsage stores a device's usage report.
func (tx *Tx) RecordDataUsage(imei string, u DataUsage) error {
	if u.PeriodStart.Unix() <= 0 || u.BytesUp < 0 || u.BytesDown < 0 {
		return Invalid("dataUsage", "must carry a positive periodStart and byte counts of 0 or more")
	}
	p := DataUsagePeriod{IMEI: imei, PeriodStart: u.PeriodStart.UTC(), BytesUp: u.BytesUp,
		BytesDown: u.BytesDown, ReceivedAt: tx.now}
	return putJSON(tx.bucket(bucketDataUsage), sessionKey(imei, p.PeriodStart), p)
}

// DataUsage returns up to n of imei's periods, newest first.
func (tx *Tx) DataUsage(imei string, n int) ([]DataUsagePeriod, error) {
	var out []DataUsagePeriod
	prefix := compositeKey(imei, "")
	c := tx.bucket(bucketDataUsage).Cursor()
	k, v := c.Seek(append(bytes.Clone(prefix), 0xff))
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix) && (n <= 0 || len(out) < n); k, v = c.Prev() {
		var p DataUsagePeriod
		if err := jsonUnmarshal(v, &p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// purgeDataUsage is the retention step of data usage periods.
func purgeDataUsage(tx *Tx, cut Cutoffs, from []byte, limit int) (int, []byte, error) {
	return seriesPurger(bucketDataUsage, noOwnership, keepNone)(tx, cut, from, limit)
}
