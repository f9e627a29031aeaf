package postgres

import (
	"fmt"
	"slices"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// mediaAges are the media_ages rows: the media age index, by class, device
// and age (to the millisecond), then file key.
type mediaAges struct{ t *tx }

// MediaAges implements store.DeviceStateRecords.
func (t *tx) MediaAges() store.MediaAgeRecords { return mediaAges{t} }

// Add implements store.MediaAgeRecords.
func (r mediaAges) Add(a store.MediaAge) error {
	err := r.t.queue(`INSERT INTO media_ages (`+mediaAgeColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, mediaAgeArgs(a)...)
	return err
}

// mediaAgeColumns are the columns of a media_ages row, in mediaAgeArgs'
// order.
const mediaAgeColumns = `class, imei, recorded_at, file_type, camera_id, file_id`

// mediaAgeArgs are the values of mediaAgeColumns for a: its age to the
// millisecond.
func mediaAgeArgs(a store.MediaAge) []any {
	return []any{string(rune(a.Class)), a.Ref.IMEI, milli(a.RecordedAt), a.Ref.FileType, a.Ref.CameraID, a.Ref.FileID}
}

// Delete implements store.MediaAgeRecords.
func (r mediaAges) Delete(a store.MediaAge) error {
	err := r.t.queue(`DELETE FROM media_ages WHERE class = $1 AND imei = $2 AND recorded_at = $3
		AND file_type = $4 AND camera_id = $5 AND file_id = $6`,
		string(rune(a.Class)), a.Ref.IMEI, milli(a.RecordedAt), a.Ref.FileType, a.Ref.CameraID, a.Ref.FileID)
	return err
}

// ageEntry is the key of one media_ages row of a class; as a resume
// position, the entry the next batch starts at.
type ageEntry struct {
	IMEI       string    `json:"imei"`
	RecordedAt time.Time `json:"recordedAt"`
	FileType   string    `json:"fileType"`
	CameraID   int       `json:"cameraId"`
	FileID     string    `json:"fileId"`
}

// purgeDevicesPerQuery is how many devices one query of a purge's walk
// finds (with the age of each one's oldest record).
const purgeDevicesPerQuery = 100

// purgeRowsPerQuery is the least number of records one query of a purge
// reads of a device.
const purgeRowsPerQuery = 100

// ageDevicesSQL finds, after (or from, with op >=) the IMEI $2, the next
// $3 devices with entries of the class $1 and the age of each one's
// oldest, skipping from device to device through the primary key.
const ageDevicesSQL = `WITH RECURSIVE d (imei, oldest) AS (
		(SELECT imei, recorded_at FROM media_ages WHERE class = $1 AND imei %s $2 ORDER BY imei, recorded_at LIMIT 1)
	UNION ALL
		SELECT n.imei, n.recorded_at FROM d CROSS JOIN LATERAL (SELECT imei, recorded_at FROM media_ages
			WHERE class = $1 AND imei > d.imei ORDER BY imei, recorded_at LIMIT 1) n
	)
	SELECT imei, oldest FROM d LIMIT $3`

// ageEntriesSQL reads the entries of class $1 of device $2 older than $3,
// oldest first, at most $4, from an entry (with op, one of >= >) or from
// the first, leaving out those whose file is of one of the ownerships $5,
// with the ownership of their files (NULL when the file is not stored).
func ageEntriesSQL(op string) string {
	from := ""
	if op != "" {
		from = `AND (a.recorded_at, a.file_type, a.camera_id, a.file_id) ` + op + ` ($6, $7, $8, $9)`
	}
	return `SELECT a.recorded_at, a.file_type, a.camera_id, a.file_id, m.ownership
		FROM media_ages a LEFT JOIN media_files m
			ON m.imei = a.imei AND m.file_type = a.file_type AND m.camera_id = a.camera_id AND m.file_id = a.file_id
		WHERE a.class = $1 AND a.imei = $2 AND a.recorded_at < $3 AND coalesce(m.ownership, 0) <> ALL ($5) ` + from + `
		ORDER BY a.recorded_at, a.file_type, a.camera_id, a.file_id LIMIT $4`
}

// TakeDue implements store.MediaAgeRecords. It finds the devices with
// entries of the class a hundred at a time, each with its oldest entry's
// age; a device whose oldest entry is not older than its latest cutoff is
// passed over without reading its entries. Of the others it reads the
// entries older than that cutoff (with their file's ownership) and keeps
// those the cutoffs say are due. A cutoff is a time before which an
// organization's files go, so once an entry of one ownership is not due
// none of that ownership's later ones is: the device's further reads leave
// that ownership out. The entries taken are deleted at the end by one
// statement that also returns their stored files. The resume position is
// the key of the next due entry.
func (r mediaAges) TakeDue(class store.MediaClass, p store.SeriesPurge) ([]store.MediaFile, int, []byte, error) {
	cls := string(rune(class))
	var from *ageEntry
	if p.From != nil {
		from = new(ageEntry)
		if err := decodePosition(p.From, from); err != nil {
			return nil, 0, nil, err
		}
	}
	var doomed []ageEntry
	var resume *ageEntry
	after, op := "", ">=" // the walk starts at the device of the resume position
	if from != nil {
		after = from.IMEI
	}
walk:
	for {
		devices, err := r.t.purgeDevices(fmt.Sprintf(ageDevicesSQL, op), cls, after)
		if err != nil {
			return nil, 0, nil, err
		}
		if len(devices) == 0 {
			break
		}
		for _, d := range devices {
			after, op = d.imei, ">"
			oc, err := p.Owners(d.imei)
			if err != nil {
				return nil, 0, nil, err
			}
			latest := oc.Latest()
			if !d.oldest.Before(latest) {
				continue // nothing of this device is due
			}
			var start *ageEntry
			startOp := ""
			if from != nil && from.IMEI == d.imei {
				start, startOp = from, ">="
			}
			kept := []int64{} // ownerships none of whose later entries is due
			for {
				n := max(p.Limit+1-len(doomed), purgeRowsPerQuery)
				entries, owns, err := r.entries(cls, d.imei, latest, start, startOp, kept, n)
				if err != nil {
					return nil, 0, nil, err
				}
				for i, e := range entries {
					if slices.Contains(kept, owns[i]) {
						continue
					}
					if !oc.Purgeable(owns[i], e.RecordedAt) {
						kept = append(kept, owns[i])
						continue
					}
					if p.Limit > 0 && len(doomed) >= p.Limit {
						resume = &entries[i]
						break walk
					}
					doomed = append(doomed, e)
				}
				if len(entries) < n {
					break
				}
				start, startOp = &entries[len(entries)-1], ">"
			}
		}
		if len(devices) < purgeDevicesPerQuery {
			break
		}
	}
	due, err := r.take(cls, doomed)
	if err != nil {
		return nil, 0, nil, err
	}
	if resume == nil {
		return due, len(doomed), nil, nil
	}
	pos, err := encodePosition(resume)
	return due, len(doomed), pos, err
}

// purgeDevice is one device of a purge's walk and the time of its oldest
// record.
type purgeDevice struct {
	imei   string
	oldest time.Time
}

// purgeDevices runs a query of devices and their oldest record's time.
func (t *tx) purgeDevices(sql string, args ...any) ([]purgeDevice, error) {
	return collect(t, scanFields(func(d *purgeDevice) []any { return []any{&d.imei, &d.oldest} }),
		sql, append(args, purgeDevicesPerQuery)...)
}

// entries reads up to n entries of class of the device imei older than
// before, from start (with op; from the first when start is nil), but for
// those of a file of one of the ownerships kept, with the ownership of each
// one's file (0 when it is not stored).
func (r mediaAges) entries(cls, imei string, before time.Time, start *ageEntry, op string, kept []int64, n int) ([]ageEntry, []int64, error) {
	args := []any{cls, imei, ceilMicro(before), n, kept}
	if start == nil {
		op = ""
	} else {
		args = append(args, start.RecordedAt, start.FileType, start.CameraID, start.FileID)
	}
	rows, err := r.t.pg.Query(r.t.ctx, ageEntriesSQL(op), args...)
	if err != nil {
		return nil, nil, classify(err)
	}
	defer rows.Close()
	var entries []ageEntry
	var owns []int64
	for rows.Next() {
		e := ageEntry{IMEI: imei}
		var own *int64
		if err := rows.Scan(&e.RecordedAt, &e.FileType, &e.CameraID, &e.FileID, &own); err != nil {
			return nil, nil, classify(err)
		}
		e.RecordedAt = e.RecordedAt.UTC()
		entries = append(entries, e)
		owns = append(owns, 0)
		if own != nil {
			owns[len(owns)-1] = *own
		}
	}
	return entries, owns, classify(rows.Err())
}

// take deletes the entries of class cls and returns the stored files
// among them, in the entries' order.
func (r mediaAges) take(cls string, entries []ageEntry) ([]store.MediaFile, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	imeis, ats, types, cams, ids := make([]string, len(entries)), make([]time.Time, len(entries)),
		make([]string, len(entries)), make([]int32, len(entries)), make([]string, len(entries))
	for i, e := range entries {
		imeis[i], ats[i], types[i], cams[i], ids[i] = e.IMEI, e.RecordedAt, e.FileType, int32(e.CameraID), e.FileID
	}
	return r.t.queryMediaFiles(`WITH taken AS (
			DELETE FROM media_ages a
			USING unnest($2::text[], $3::timestamptz[], $4::text[], $5::integer[], $6::text[]) WITH ORDINALITY
				AS d (imei, recorded_at, file_type, camera_id, file_id, n)
			WHERE a.class = $1 AND a.imei = d.imei AND a.recorded_at = d.recorded_at
				AND a.file_type = d.file_type AND a.camera_id = d.camera_id AND a.file_id = d.file_id
			RETURNING d.n, d.imei, d.file_type, d.camera_id, d.file_id
		)
		SELECT `+qualify("m", mediaFileColumns)+` FROM taken JOIN media_files m
			ON m.imei = taken.imei AND m.file_type = taken.file_type AND m.camera_id = taken.camera_id AND m.file_id = taken.file_id
		ORDER BY taken.n`, cls, imeis, ats, types, cams, ids)
}
