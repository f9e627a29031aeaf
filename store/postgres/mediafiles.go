package postgres

import (
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// mediaFiles are the media_files rows, by (imei, file_type, camera_id,
// file_id); the pending column keeps the media service's work list.
type mediaFiles struct{ t *tx }

// MediaFiles implements store.DeviceStateRecords.
func (t *tx) MediaFiles() store.MediaFileRecords { return mediaFiles{t} }

// mediaFileColumns are the columns scanMediaFile reads, in its order.
const mediaFileColumns = `imei, file_type, camera_id, file_id, state, refs, blob_key, size, content_type,
	attempts, error, requested_at, uploaded_at, updated_at, recorded_at, ownership, clip_request`

// mediaKeyOrder orders media files by their key (store.MediaRef.Key,
// bytewise): the camera id compares as text.
const mediaKeyOrder = `imei, file_type, camera_id::text COLLATE "C", file_id`

// scanMediaFile reads the mediaFileColumns of one row, followed by the
// columns of more.
func scanMediaFile(row pgx.Row, more ...any) (store.MediaFile, error) {
	var m store.MediaFile
	err := row.Scan(append([]any{&m.IMEI, &m.FileType, &m.CameraID, &m.FileID, &m.State, &m.Refs, &m.Blob, &m.Size,
		&m.ContentType, &m.Attempts, &m.Error, zeroTime{&m.RequestedAt}, zeroTime{&m.UploadedAt},
		zeroTime{&m.UpdatedAt}, zeroTime{&m.RecordedAt}, &m.Ownership, &m.ClipRequest}, more...)...)
	return m, err
}

// mediaFileArgs are the values of mediaFileColumns for m, then pending.
func mediaFileArgs(m *store.MediaFile, pending bool) []any {
	return []any{m.IMEI, m.FileType, m.CameraID, m.FileID, m.State, m.Refs, m.Blob, m.Size, m.ContentType,
		m.Attempts, m.Error, nullTime(m.RequestedAt), nullTime(m.UploadedAt), m.UpdatedAt, nullTime(m.RecordedAt),
		m.Ownership, m.ClipRequest, pending}
}

// queryMediaFiles returns the files sql selects (with mediaFileColumns).
func (t *tx) queryMediaFiles(sql string, args ...any) ([]store.MediaFile, error) {
	return collect(t, func(row pgx.CollectableRow) (store.MediaFile, error) { return scanMediaFile(row) }, sql, args...)
}

// Get implements store.MediaFileRecords.
func (r mediaFiles) Get(ref store.MediaRef) (*store.MediaFile, error) {
	m, err := scanMediaFile(r.t.pg.QueryRow(r.t.ctx, `SELECT `+mediaFileColumns+` FROM media_files
		WHERE imei = $1 AND file_type = $2 AND camera_id = $3 AND file_id = $4`,
		ref.IMEI, ref.FileType, ref.CameraID, ref.FileID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.NotFound("")
	}
	if err != nil {
		return nil, classify(err)
	}
	return &m, nil
}

// uploadedSQL is true where the file of media_files named by the
// columns file_type, camera_id and file_id, and the device imei, is
// uploaded: an index probe by key.
func uploadedSQL(imei string) string {
	return `EXISTS (SELECT FROM media_files m WHERE m.imei = ` + imei + ` AND m.file_type = f.file_type
		AND m.camera_id = f.camera_id AND m.file_id = f.file_id AND m.state = '` + store.MediaUploaded + `')`
}

var _ store.MediaUploadedLookup = mediaFiles{}

// Uploaded implements store.MediaUploadedLookup: what a page of events of
// the read-only transaction read of its files (readPage) answers for them,
// and the rest are asked in one statement.
func (r mediaFiles) Uploaded(refs []store.MediaRef) ([]bool, error) {
	out := make([]bool, len(refs))
	var imeis, types, ids []string
	var cameras []int32
	var at []int // the index in refs of each file asked
	for i, ref := range refs {
		if u, ok := r.t.memo.uploaded[ref]; ok {
			out[i] = u
			continue
		}
		imeis, types, cameras, ids = append(imeis, ref.IMEI), append(types, ref.FileType), append(cameras, int32(ref.CameraID)),
			append(ids, ref.FileID)
		at = append(at, i)
	}
	if len(at) == 0 {
		return out, nil
	}
	rows, err := r.t.pg.Query(r.t.ctx, `SELECT f.n FROM unnest($1::text[], $2::text[], $3::integer[], $4::text[])
		WITH ORDINALITY AS f(imei, file_type, camera_id, file_id, n) WHERE `+uploadedSQL("f.imei"), imeis, types, cameras, ids)
	if err != nil {
		return nil, classify(err)
	}
	asked, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, classify(err)
	}
	for _, n := range asked {
		out[at[n-1]] = true
	}
	return out, nil
}

// Put implements store.MediaFileRecords.
func (r mediaFiles) Put(m *store.MediaFile, pending bool) error {
	err := r.t.queue(`INSERT INTO media_files (`+mediaFileColumns+`, pending)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
		ON CONFLICT (imei, file_type, camera_id, file_id) DO UPDATE SET
			state = EXCLUDED.state, refs = EXCLUDED.refs, blob_key = EXCLUDED.blob_key, size = EXCLUDED.size,
			content_type = EXCLUDED.content_type, attempts = EXCLUDED.attempts, error = EXCLUDED.error,
			requested_at = EXCLUDED.requested_at, uploaded_at = EXCLUDED.uploaded_at, updated_at = EXCLUDED.updated_at,
			recorded_at = EXCLUDED.recorded_at, ownership = EXCLUDED.ownership, clip_request = EXCLUDED.clip_request,
			pending = EXCLUDED.pending`,
		mediaFileArgs(m, pending)...)
	return err
}

// Delete implements store.MediaFileRecords; the file's event references go
// with it.
func (r mediaFiles) Delete(ref store.MediaRef) error {
	err := r.t.queue(`DELETE FROM media_files WHERE imei = $1 AND file_type = $2 AND camera_id = $3 AND file_id = $4`,
		ref.IMEI, ref.FileType, ref.CameraID, ref.FileID)
	return err
}

// Pending implements store.MediaFileRecords: the media_files_pending
// index, in its order.
func (r mediaFiles) Pending(limit int) ([]store.MediaFile, error) {
	return r.t.queryMediaFiles(`SELECT `+mediaFileColumns+` FROM media_files WHERE pending
		ORDER BY `+mediaKeyOrder+` LIMIT $1`, limitParam(limit))
}

// OfType implements store.MediaFileRecords: a range of the primary key.
func (r mediaFiles) OfType(imei, fileType string) ([]store.MediaFile, error) {
	return r.t.queryMediaFiles(`SELECT `+mediaFileColumns+` FROM media_files WHERE imei = $1 AND file_type = $2
		ORDER BY `+mediaKeyOrder, imei, fileType)
}

// mediaEventRefs are the media_event_refs rows.
type mediaEventRefs struct{ t *tx }

// MediaEventRefs implements store.DeviceStateRecords.
func (t *tx) MediaEventRefs() store.MediaEventRefRecords { return mediaEventRefs{t} }

// Add implements store.MediaEventRefRecords. The file must be stored (the
// store writes it first).
func (r mediaEventRefs) Add(ref store.MediaRef, eventID int64) error {
	err := r.t.queue(`INSERT INTO media_event_refs (`+mediaEventRefColumns+`)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, mediaEventRefArgs(ref, eventID)...)
	return err
}

// mediaEventRefColumns are the columns of a media_event_refs row, in
// mediaEventRefArgs' order.
const mediaEventRefColumns = `imei, file_type, camera_id, file_id, event_id`

// mediaEventRefArgs are the values of mediaEventRefColumns for event
// eventID's reference to the file ref names.
func mediaEventRefArgs(ref store.MediaRef, eventID int64) []any {
	return []any{ref.IMEI, ref.FileType, ref.CameraID, ref.FileID, eventID}
}

// Delete implements store.MediaEventRefRecords.
func (r mediaEventRefs) Delete(ref store.MediaRef, eventID int64) error {
	err := r.t.queue(`DELETE FROM media_event_refs
		WHERE imei = $1 AND file_type = $2 AND camera_id = $3 AND file_id = $4 AND event_id = $5`,
		ref.IMEI, ref.FileType, ref.CameraID, ref.FileID, eventID)
	return err
}

// EventIDs implements store.MediaEventRefRecords.
func (r mediaEventRefs) EventIDs(ref store.MediaRef) ([]int64, error) {
	return collect(r.t, pgx.RowTo[int64], `SELECT event_id FROM media_event_refs
		WHERE imei = $1 AND file_type = $2 AND camera_id = $3 AND file_id = $4 ORDER BY event_id`,
		ref.IMEI, ref.FileType, ref.CameraID, ref.FileID)
}

// mediaTrash is the media_trash table.
type mediaTrash struct{ t *tx }

// MediaTrash implements store.DeviceStateRecords.
func (t *tx) MediaTrash() store.MediaTrashRecords { return mediaTrash{t} }

// Add implements store.MediaTrashRecords.
func (r mediaTrash) Add(blob string) error {
	_, err := r.t.exec(`INSERT INTO media_trash (blob_key) VALUES ($1) ON CONFLICT DO NOTHING`, blob)
	return err
}

// List implements store.MediaTrashRecords.
func (r mediaTrash) List(limit int) ([]string, error) {
	return collect(r.t, pgx.RowTo[string], `SELECT blob_key FROM media_trash ORDER BY blob_key LIMIT $1`, limitParam(limit))
}

// Delete implements store.MediaTrashRecords.
func (r mediaTrash) Delete(blob string) error {
	_, err := r.t.exec(`DELETE FROM media_trash WHERE blob_key = $1`, blob)
	return err
}
