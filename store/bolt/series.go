package bolt

import (
	"bytes"
	"encoding/json"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/fleetcam/fleetcam/store"
)

// purgeSeries runs one batch p of a purge of the device series in b, whose
// keys are imei, 0, unix ms[, …]: it deletes each record that p.Owners says
// is due, by the ownership ownership reads from the record, unless keep
// vetoes it (an open trip or session).
func purgeSeries(b *bbolt.Bucket, p store.SeriesPurge, ownership func(v []byte) int64, keep func(k, v []byte) bool) (int, []byte, error) {
	c := b.Cursor()
	k, v := c.First()
	if p.From != nil {
		k, v = c.Seek(p.From)
	}
	var doomed [][]byte
	for k != nil {
		if p.Limit > 0 && len(doomed) >= p.Limit {
			return deleteKeys(b, doomed, k)
		}
		sep := bytes.IndexByte(k, 0)
		if sep < 0 || len(k) < sep+9 {
			k, v = c.Next()
			continue
		}
		oc, err := p.Owners(string(k[:sep]))
		if err != nil {
			return 0, nil, err
		}
		at := time.UnixMilli(btoi(k[sep+1 : sep+9]))
		if !at.Before(oc.Latest()) {
			// Nothing newer of this device goes: skip to the next device.
			k, v = c.Seek(append(k[:sep+1:sep+1], 0xff))
			continue
		}
		if oc.Purgeable(ownership(v), at) && (keep == nil || !keep(k, v)) {
			doomed = append(doomed, bytes.Clone(k))
		}
		k, v = c.Next()
	}
	return deleteKeys(b, doomed, nil)
}

// purgeFrom runs one batch of a purge of b: it walks b in key order from
// the resume position from (its first key when from is nil) and deletes
// the records due dooms, until due says to stop or limit records are
// doomed (no bound when limit is 0). When the limit stops it, the batch
// resumes at the key of the first record it did not reach; else at nil.
func purgeFrom(b *bbolt.Bucket, from []byte, limit int, due func(k, v []byte) (doom, more bool, err error)) (int, []byte, error) {
	var doomed [][]byte
	var resume []byte
	err := walkFrom(b, from, nil, func(k, v []byte) (bool, error) {
		if limit > 0 && len(doomed) >= limit {
			resume = k
			return false, nil
		}
		doom, more, err := due(k, v)
		if doom {
			doomed = append(doomed, bytes.Clone(k))
		}
		return more, err
	})
	if err != nil {
		return 0, nil, err
	}
	return deleteKeys(b, doomed, resume)
}

// deleteKeys deletes keys from b and passes resume through.
func deleteKeys(b *bbolt.Bucket, keys [][]byte, resume []byte) (int, []byte, error) {
	resume = bytes.Clone(resume)
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, nil, err
		}
	}
	return len(keys), resume, nil
}

// jsonOwnership reads the ownership of a JSON series record (trips, driver
// sessions).
func jsonOwnership(v []byte) int64 {
	var r struct {
		Ownership int64 `json:"ownership"`
	}
	if json.Unmarshal(v, &r) != nil {
		return 0
	}
	return r.Ownership
}
