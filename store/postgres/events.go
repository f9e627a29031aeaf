package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// Events are rows of the events table, partitioned by month of the event's
// time, with their files and comments in tables of their own
// (migrations/00003_events.sql). A statement that knows an event's time
// names it by (id, time), which picks its partition; Get, which knows the
// id only, looks it up in the primary key index of each partition.

// Events implements store.EventRecords.
func (t *tx) Events() store.EventSet { return events{t} }

// events is store.EventSet over the events table.
type events struct{ t *tx }

// eventColumns selects an event of the table aliased e, for scanEvent: its
// columns, then its files and comments as JSON arrays (NULL when none).
const eventColumns = eventRowFields + `,
	` + eventFilesOf + `),
	` + eventCommentsOf

// The parts of eventColumns: the row's own columns, and the subqueries of
// its files (without the closing parenthesis, for eventColumnsWithin) and
// of its comments.
const (
	eventRowFields = `e.id, e.imei, e.organization_id, e.partner_id, e.type, e.time, e.lat, e.lon, e.alt, e.speed_kmh,
	e.accuracy, e.severity, e.status, e.metadata, e.geofence_id, e.geofence_path, e.geofence_name,
	e.sd_card_uuid, e.sd_card_manufacturer, e.driver_id, e.camera_id, e.device_event_id, e.media_notified,
	e.ownership, e.created_at`
	eventFilesOf = `(SELECT json_agg(json_build_object('cameraId', f.camera_id, 'fileId', f.file_id, 'fileType', f.file_type)
	        ORDER BY f.position)
	   FROM event_files f WHERE f.event_id = e.id AND f.event_time = e.time`
	eventCommentsOf = `(SELECT json_agg(json_build_object('id', c.id, 'comment', c.comment, 'createdByAudienceName', c.audience,
	        'createdById', coalesce(c.created_by_id, 0), 'createdByEmail', coalesce(c.created_by_email, ''),
	        'createdAt', c.created_at) ORDER BY c.id)
	   FROM event_comments c WHERE c.event_id = e.id AND c.event_time = e.time)`
)

// eventColumnsWithin is eventColumns for a page of events whose time is
// within the conditions lo and hi on it (">= @start", "< @to"; "" where
// the window has no bound):
//
//   - The files' subquery names the partitions of event_files of that
//     window only, which the planner prunes to before it plans one (a plan
//     over every day's partition of the files takes longer than a page's
//     execution). Each file also says whether its bytes are uploaded, read
//     by its key in media_files, which the API shows with every event of a
//     page (mediaFiles.Uploaded).
//   - Few events have comments, and a window without any is the rule: one
//     look into the comments' times, made once for the statement, spares
//     each row of such a page its own lookup (a subquery per row costs as
//     much as a third of the page's time on the server, rows or none).
func eventColumnsWithin(lo, hi string) string {
	files, comments := "", ""
	for _, c := range []string{lo, hi} {
		if c == "" {
			continue
		}
		files += ` AND f.event_time ` + c
		if comments == "" {
			comments = ` WHERE k.event_time ` + c
		} else {
			comments += ` AND k.event_time ` + c
		}
	}
	return eventRowFields + `,
	` + pageFilesOf + files + `),
	CASE WHEN EXISTS (SELECT FROM event_comments k` + comments + `) THEN ` + eventCommentsOf + ` END`
}

// pageFilesOf is eventFilesOf with, for each file, whether it is uploaded.
var pageFilesOf = `(SELECT json_agg(json_build_object('cameraId', f.camera_id, 'fileId', f.file_id, 'fileType', f.file_type,
	        'uploaded', ` + uploadedSQL("e.imei") + `) ORDER BY f.position)
	   FROM event_files f WHERE f.event_id = e.id AND f.event_time = e.time`

// pageFile is a file of an event as a page's statement reads it
// (pageFilesOf): Uploaded is nil where the statement does not say.
type pageFile struct {
	store.EventFile
	Uploaded *bool `json:"uploaded"`
}

// scanEvent reads a row of eventColumns, followed by the columns of more.
func scanEvent(row pgx.Row, more ...any) (*store.Event, error) {
	e := &store.Event{}
	_, err := newEventScanner(more...).scan(row, e, false)
	return e, err
}

// eventScanner reads rows of eventColumns or eventColumnsWithin,
// followed by the columns of more, into events. Its scan targets, and the
// list of them the driver is given, are made once for all the rows of a
// statement: a page of events then allocates what its events hold, not
// a target for each nullable column of each row.
type eventScanner struct {
	e                                            store.Event
	partner, geofence, driver                    pgtype.Int8
	metadata, path, name, sdUUID, sdMaker, devID pgtype.Text
	camera                                       pgtype.Int4
	files, comments                              []byte
	dest                                         []any
}

// newEventScanner is an eventScanner of rows followed by the columns of more.
func newEventScanner(more ...any) *eventScanner {
	s := &eventScanner{}
	e := &s.e
	s.dest = append([]any{&e.ID, &e.IMEI, &e.OrganizationID, &s.partner, &e.Type, &e.Time, &e.Lat, &e.Lon, &e.Alt,
		&e.Speed, &e.Accuracy, &e.Severity, &e.Status, &s.metadata, &s.geofence, &s.path, &s.name,
		&s.sdUUID, &s.sdMaker, &s.driver, &s.camera, &s.devID, &e.MediaNotified,
		&e.Ownership, &e.CreatedAt, &s.files, &s.comments}, more...)
	return s
}

// scan reads row into e. With told it also returns whether each of the
// event's files is uploaded, as a row of eventColumnsWithin says (nil
// where the row does not say).
func (s *eventScanner) scan(row pgx.Row, e *store.Event, told bool) ([]bool, error) {
	s.e, s.files, s.comments = store.Event{}, nil, nil
	if err := row.Scan(s.dest...); err != nil {
		return nil, err
	}
	*e = s.e
	e.PartnerID, e.GeoFenceID, e.DriverID = s.partner.Int64, s.geofence.Int64, s.driver.Int64
	e.Metadata, e.GeoFencePath, e.GeoFenceName = s.metadata.String, s.path.String, s.name.String
	e.CameraID, e.DeviceEventID = int(s.camera.Int32), s.devID.String
	e.Time, e.CreatedAt = e.Time.UTC(), e.CreatedAt.UTC()
	if s.sdUUID.Valid {
		e.SDCard = &store.SDCardInfo{UUID: s.sdUUID.String, Manufacturer: s.sdMaker.String}
	}
	var uploaded []bool
	if s.files != nil && !told {
		if err := json.Unmarshal(s.files, &e.Files); err != nil {
			return nil, fmt.Errorf("store: files of event %d: %w", e.ID, err)
		}
	} else if s.files != nil {
		var read []pageFile
		if err := json.Unmarshal(s.files, &read); err != nil {
			return nil, fmt.Errorf("store: files of event %d: %w", e.ID, err)
		}
		e.Files = make([]store.EventFile, len(read))
		for i, f := range read {
			e.Files[i] = f.EventFile
			if f.Uploaded != nil {
				if uploaded == nil {
					uploaded = make([]bool, len(read))
				}
				uploaded[i] = *f.Uploaded
			}
		}
	}
	if s.comments != nil {
		if err := json.Unmarshal(s.comments, &e.Comments); err != nil {
			return nil, fmt.Errorf("store: comments of event %d: %w", e.ID, err)
		}
		for i := range e.Comments {
			e.Comments[i].CreatedAt = e.Comments[i].CreatedAt.UTC()
		}
	}
	return uploaded, nil
}

// eventArgs are the arguments of e's columns and of its files and comments
// in writeEvent, insertEvent and updateEvent.
func eventArgs(e *store.Event) pgx.NamedArgs {
	a := pgx.NamedArgs{
		"id": e.ID, "imei": e.IMEI, "organization_id": e.OrganizationID, "partner_id": nullZero(e.PartnerID),
		"type": e.Type, "time": e.Time, "lat": e.Lat, "lon": e.Lon, "alt": e.Alt, "speed_kmh": e.Speed,
		"accuracy": e.Accuracy, "severity": e.Severity, "status": e.Status, "metadata": nullZero(e.Metadata),
		"geofence_id": nullZero(e.GeoFenceID), "geofence_path": nullZero(e.GeoFencePath),
		"geofence_name": nullZero(e.GeoFenceName), "sd_card_uuid": nil, "sd_card_manufacturer": nil,
		"driver_id": nullZero(e.DriverID), "camera_id": nullZero(e.CameraID),
		"device_event_id": nullZero(e.DeviceEventID), "media_notified": e.MediaNotified,
		"ownership": e.Ownership, "created_at": e.CreatedAt,
	}
	if e.SDCard != nil {
		a["sd_card_uuid"], a["sd_card_manufacturer"] = e.SDCard.UUID, e.SDCard.Manufacturer
	}
	cameras, fileIDs, types := make([]int32, len(e.Files)), make([]string, len(e.Files)), make([]string, len(e.Files))
	for i, f := range e.Files {
		cameras[i], fileIDs[i], types[i] = int32(f.CameraID), f.FileID, f.FileType
	}
	a["file_cameras"], a["file_ids"], a["file_types"], a["file_count"] = cameras, fileIDs, types, len(e.Files)
	n := len(e.Comments)
	ids, texts, audiences, authors, emails, ats := make([]int64, n), make([]string, n), make([]string, n),
		make([]int64, n), make([]string, n), make([]time.Time, n)
	for i, c := range e.Comments {
		ids[i], texts[i], audiences[i], authors[i], emails[i], ats[i] =
			c.ID, c.Comment, c.CreatedByAudienceName, c.CreatedByID, c.CreatedByEmail, c.CreatedAt
	}
	a["comment_ids"], a["comment_texts"], a["comment_audiences"] = ids, texts, audiences
	a["comment_authors"], a["comment_emails"], a["comment_times"] = authors, emails, ats
	return a
}

// The statements of Insert and Update. An event and its files and comments
// are written by one statement: the files and comments are inserted from
// the event row the statement wrote (e), so that none is written for an
// event that is not there.
const (
	// eventRowColumns are the columns of an event's row but its id, each
	// the name of its value in eventArgs.
	eventRowColumns = `imei, organization_id, partner_id, type, time, lat, lon, alt, speed_kmh,
		accuracy, severity, status, metadata, geofence_id, geofence_path, geofence_name, sd_card_uuid,
		sd_card_manufacturer, driver_id, camera_id, device_event_id, media_notified, ownership, created_at`

	// eventRowValues are the values of eventRowColumns.
	eventRowValues = `@imei, @organization_id, @partner_id, @type, @time, @lat, @lon, @alt, @speed_kmh,
		@accuracy, @severity, @status, @metadata, @geofence_id, @geofence_path, @geofence_name, @sd_card_uuid,
		@sd_card_manufacturer, @driver_id, @camera_id, @device_event_id, @media_notified, @ownership, @created_at`

	insertEventRow = `INSERT INTO events (` + eventRowColumns + `) VALUES (` + eventRowValues + `)
	RETURNING id, time`

	insertEventFiles = `INSERT INTO event_files (event_id, event_time, position, camera_id, file_id, file_type)
	SELECT e.id, e.time, f.position - 1, f.camera_id, f.file_id, f.file_type
	  FROM e, unnest(@file_cameras::integer[], @file_ids::text[], @file_types::text[])
	          WITH ORDINALITY AS f(camera_id, file_id, file_type, position)`

	insertEventComments = `INSERT INTO event_comments (id, event_id, event_time, comment, audience, created_by_id,
		created_by_email, created_at)
	SELECT c.id, e.id, e.time, c.comment, c.audience, nullif(c.created_by_id, 0), nullif(c.created_by_email, ''),
	       c.created_at
	  FROM e, unnest(@comment_ids::bigint[], @comment_texts::text[], @comment_audiences::text[],
	                 @comment_authors::bigint[], @comment_emails::text[], @comment_times::timestamptz[])
	          AS c(id, comment, audience, created_by_id, created_by_email, created_at)`

	insertEvent = `WITH e AS (` + insertEventRow + `),
	files AS (` + insertEventFiles + `),
	comments AS (` + insertEventComments + `)
	SELECT id, time FROM e`

	// insertEventRowWithID and insertEventWithID are insertEventRow and
	// insertEvent for an event whose id was drawn ahead (eventids.go).
	insertEventRowWithID = `INSERT INTO events (id, ` + eventRowColumns + `) VALUES (@id, ` + eventRowValues + `)`
	insertEventWithID    = `WITH e AS (` + insertEventRowWithID + ` RETURNING id, time),
	files AS (` + insertEventFiles + `),
	comments AS (` + insertEventComments + `)
	SELECT id FROM e`

	// updateEvent rewrites the row of (id, time) and makes its files and
	// comments those of the event, writing only those that changed.
	updateEvent = `WITH e AS (
		UPDATE events SET imei = @imei, organization_id = @organization_id, partner_id = @partner_id,
		       type = @type, lat = @lat, lon = @lon, alt = @alt, speed_kmh = @speed_kmh, accuracy = @accuracy,
		       severity = @severity, status = @status, metadata = @metadata, geofence_id = @geofence_id,
		       geofence_path = @geofence_path, geofence_name = @geofence_name, sd_card_uuid = @sd_card_uuid,
		       sd_card_manufacturer = @sd_card_manufacturer, driver_id = @driver_id, camera_id = @camera_id,
		       device_event_id = @device_event_id, media_notified = @media_notified, ownership = @ownership,
		       created_at = @created_at
		 WHERE id = @id AND time = @time
		RETURNING id, time),
	dropped_files AS (
		DELETE FROM event_files WHERE event_id = @id AND event_time = @time AND position >= @file_count),
	files AS (` + insertEventFiles + `
		ON CONFLICT (event_id, event_time, position) DO UPDATE
		   SET camera_id = excluded.camera_id, file_id = excluded.file_id, file_type = excluded.file_type
		 WHERE (event_files.camera_id, event_files.file_id, event_files.file_type)
		       IS DISTINCT FROM (excluded.camera_id, excluded.file_id, excluded.file_type)),
	dropped_comments AS (
		DELETE FROM event_comments WHERE event_id = @id AND event_time = @time AND id <> ALL (@comment_ids::bigint[])),
	comments AS (` + insertEventComments + `
		ON CONFLICT (id) DO UPDATE
		   SET event_id = excluded.event_id, event_time = excluded.event_time, comment = excluded.comment,
		       audience = excluded.audience, created_by_id = excluded.created_by_id,
		       created_by_email = excluded.created_by_email, created_at = excluded.created_at
		 WHERE (event_comments.event_id, event_comments.event_time, event_comments.comment,
		        event_comments.audience, event_comments.created_by_id, event_comments.created_by_email,
		        event_comments.created_at)
		       IS DISTINCT FROM (excluded.event_id, excluded.event_time, excluded.comment, excluded.audience,
		        excluded.created_by_id, excluded.created_by_email, excluded.created_at))
	SELECT count(*) FROM e`
)

// Get implements store.EventSet.
func (s events) Get(id int64) (*store.Event, error) {
	e, err := scanEvent(s.t.pg.QueryRow(s.t.ctx, `SELECT `+eventColumns+` FROM events e WHERE e.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.NotFound("event %d", id)
	}
	if err != nil {
		return nil, classify(err)
	}
	return e, nil
}

// Insert implements store.EventSet: the events identity gives the id. An
// event without files or comments, most of what devices report, is one
// plain INSERT. With an id drawn ahead (eventids.go) the INSERT is queued
// and goes with the transaction's next statement; otherwise it returns
// the id drawn for it.
func (s events) Insert(e *store.Event) error {
	if b := s.t.bulk; b != nil {
		return b.insertEvent(e)
	}
	if id, ok := s.t.takeEventID(); ok {
		sql := insertEventWithID
		if len(e.Files) == 0 && len(e.Comments) == 0 {
			sql = insertEventRowWithID
		}
		e.ID = id
		if err := s.t.queue(sql, eventArgs(e)); err != nil {
			e.ID = 0
			return err
		}
		return s.t.countEvent(e)
	}
	sql := insertEvent
	if len(e.Files) == 0 && len(e.Comments) == 0 {
		sql = insertEventRow
	}
	var id int64
	var at time.Time
	if err := s.t.pg.QueryRow(s.t.ctx, sql, eventArgs(e)).Scan(&id, &at); err != nil {
		return classify(err)
	}
	e.ID = id
	return s.t.countEvent(e)
}

// Update implements store.EventSet: the row of e's id and time, which the
// caller leaves as stored, and its files and comments; store.ErrNotFound
// when the event is not stored.
func (s events) Update(e *store.Event) error {
	var n int
	if err := s.t.pg.QueryRow(s.t.ctx, updateEvent, eventArgs(e)).Scan(&n); err != nil {
		return classify(err)
	}
	if n == 0 {
		return store.NotFound("event %d", e.ID)
	}
	return nil
}

// Delete implements store.EventSet: its files and comments go with it (ON
// DELETE CASCADE), and its hour's and its device's day's counts go down in
// the same statement when the row was there (eventcounts.go).
func (s events) Delete(e *store.Event) error {
	_, err := s.t.exec(deleteEventSQL, e.ID, e.Time, s.t.node)
	return err
}

// NextCommentID implements store.EventSet: the identity sequence of the
// comments, drawn before the comment is stored with the event.
func (s events) NextCommentID() (int64, error) {
	return queryValue[int64](s.t, `SELECT nextval(pg_get_serial_sequence('event_comments', 'id'))`)
}
