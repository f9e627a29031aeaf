package store

import (
	"bytes"
	"time"
)

// The bbolt layout of the event indexes, for the exports of export_test.go
// that tests written against it still use; store/bolt keeps the indexes.

// keyEventHours in the meta bucket says the hourly event counts are complete.
var keyEventHours = []byte("org_event_hours")

// orgEventKey is the org_events key of an event: org(8) unix-ms(8) id(8).
func orgEventKey(org int64, t time.Time, id int64) []byte {
	return append(append(itob(org), itob(max(t.UnixMilli(), 0))...), itob(id)...)
}

// walkEvents walks the index keys from..to (inclusive) of a bbolt store,
// counts those match keeps (all when match is nil) and decodes the records
// of page p; with a status, only the records in that status count. The
// event id is a key's last 8 bytes.
func (tx *Tx) walkEvents(index, from, to []byte, match func(k, v []byte) bool, status string, p Page) ([]Event, int, error) {
	var out []Event
	total := 0
	c := tx.bucket(index).Cursor()
	for k, v := c.Seek(from); k != nil && bytes.Compare(k, to) <= 0; k, v = c.Next() {
		if match != nil && !match(k, v) {
			continue
		}
		inPage := total >= p.Offset && (p.Limit <= 0 || len(out) < p.Limit)
		if status == "" && !inPage {
			total++
			continue
		}
		e, err := tx.Event(btoi(k[len(k)-8:]))
		if err != nil {
			return nil, 0, err
		}
		if status != "" && e.Status != status {
			continue
		}
		if inPage {
			out = append(out, *e)
		}
		total++
	}
	return out, total, nil
}
