package store

import "time"

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
	return tx.rec.DataUsagePeriods().DeleteDevice(d.IMEI)
}

// RecordDataUsage stores a device's usage report.
func (tx *Tx) RecordDataUsage(imei string, u DataUsage) error {
	if !ValidDeviceTime(u.PeriodStart) || u.BytesUp < 0 || u.BytesDown < 0 {
		return Invalid("dataUsage", "periodStart %s and the byte counts must be 0 or more", RuleDeviceTime)
	}
	p := DataUsagePeriod{IMEI: imei, PeriodStart: u.PeriodStart.UTC(), BytesUp: u.BytesUp,
		BytesDown: u.BytesDown, ReceivedAt: tx.now}
	return tx.rec.DataUsagePeriods().Put(&p)
}

// DataUsage returns up to n of imei's periods, newest first.
func (tx *Tx) DataUsage(imei string, n int) ([]DataUsagePeriod, error) {
	return tx.rec.DataUsagePeriods().Latest(imei, n)
}

// purgeDataUsage is the retention step of data usage periods. A period
// carries no ownership: it is of the organization the device is in (a
// removed device's periods go with it).
func purgeDataUsage(tx *Tx, cut Cutoffs, from []byte, limit int) (int, []byte, error) {
	return tx.rec.DataUsagePeriods().Purge(seriesPurge(tx, cut, from, limit))
}
