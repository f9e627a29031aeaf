package store

import (
	"bytes"
	"encoding/binary"
	"time"
)

// The keys of the webhook queue as the bbolt file holds them, which
// export_test.go still exports; store/bolt keeps the queue and tests them
// (store/bolt/deliveries_test.go).

// queueKey orders pending deliveries by endpoint, then device, then id.
func queueKey(orgID int64, url, imei string, id int64) []byte {
	k := append(compositeKey(orgID, url), 0)
	k = append(k, imei...)
	return append(k, itob(id)...)
}

func queueValue(d *Delivery) []byte {
	v := make([]byte, 16)
	binary.BigEndian.PutUint64(v, uint64(d.NextAttemptAt.UnixNano()))
	binary.BigEndian.PutUint64(v[8:], uint64(d.CreatedAt.UnixNano()))
	return v
}

func parseQueueEntry(k, v []byte) (QueueEntry, bool) {
	if len(k) < 8+1+1+8 || len(v) != 16 {
		return QueueEntry{}, false
	}
	q := QueueEntry{OrganizationID: btoi(k[:8])}
	rest := k[9:]
	i := bytes.IndexByte(rest, 0)
	if i < 0 || len(rest) < i+1+8 {
		return QueueEntry{}, false
	}
	q.URL = string(rest[:i])
	rest = rest[i+1:]
	q.IMEI = string(rest[:len(rest)-8])
	q.DeliveryID = btoi(rest[len(rest)-8:])
	q.NextAttemptAt = time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC()
	q.CreatedAt = time.Unix(0, int64(binary.BigEndian.Uint64(v[8:]))).UTC()
	return q, true
}
