package postgres

import (
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// The copy's side of the drivers, the alarms, the device state and the
// webhook records.

var _ = register(map[store.Kind]copyKind{
	store.KindDrivers: kindOf(tableList("drivers"),
		selected(`SELECT `+driverColumns+` FROM drivers ORDER BY id`, scanned(driverFields)),
		insertedAs("drivers", func(d *store.Driver) *int64 { return &d.ID },
			func(t *tx, d *store.Driver) error { return drivers{t}.Insert(d) })),
	store.KindDriverSessions: kindOf(tableList("driver_sessions"),
		selected(`SELECT `+sessionColumns+` FROM driver_sessions ORDER BY imei, started_at`,
			func(row pgx.Row) (*store.StoredDriverSession, error) {
				s, err := scanSession(row)
				if err != nil {
					return nil, err
				}
				return &store.StoredDriverSession{DriverSession: *s, Open: s.End.IsZero()}, nil
			}),
		// A session without an end is its device's open one.
		copied("driver_sessions", sessionColumns, rows(func(r *store.StoredDriverSession) []any {
			return sessionArgs(&r.DriverSession)
		}))),
	store.KindDriverPinFailures: kindOf(tableList("driver_pin_failures"),
		byKey(`SELECT imei FROM driver_pin_failures WHERE imei > $1 ORDER BY imei LIMIT $2`,
			func(t *tx, imei string) (*store.DriverPinFailures, error) {
				times, err := driverPinFailures{t}.Get(imei)
				return &store.DriverPinFailures{IMEI: imei, Times: times}, err
			}),
		each(func(t *tx, r *store.DriverPinFailures) error { return driverPinFailures{t}.Put(r.IMEI, r.Times) })),
	store.KindDriverAssignments: kindOf(tableList("driver_assignments"),
		selected(`SELECT `+assignmentColumns+` FROM driver_assignments ORDER BY id`,
			func(row pgx.Row) (*store.DriverAssignment, error) {
				a, err := scanAssignment(row)
				return &a, err
			}),
		insertedAs("driver_assignments", func(a *store.DriverAssignment) *int64 { return &a.ID },
			func(t *tx, a *store.DriverAssignment) error { return driverAssignments{t}.Insert(a) })),

	store.KindAlarms: kindOf(tableList("alarms", "alarm_notes"), dumpAlarms,
		each(func(t *tx, a *store.Alarm) error { return alarms{t}.Insert(a) })),
	store.KindAlarmTriples: kindOf(tableList("alarm_triples"),
		selected(`SELECT imei, definition_id, created_at, alarm_id FROM alarm_triples ORDER BY imei, definition_id, created_at`,
			scanned(func(r *store.AlarmTriple) []any {
				return []any{&r.IMEI, &r.DefinitionID, zeroTime{&r.CreatedAt}, &r.AlarmID}
			})),
		each(func(t *tx, r *store.AlarmTriple) error { return alarms{t}.putTriple(*r) })),
	store.KindOpenAlarms: kindOf(tableList("open_alarms"),
		selected(`SELECT imei, definition_id, alarm_id FROM open_alarms ORDER BY imei, definition_id`,
			scanned(func(r *store.OpenAlarm) []any { return []any{&r.IMEI, &r.DefinitionID, &r.AlarmID} })),
		each(func(t *tx, r *store.OpenAlarm) error { return openAlarms{t}.Put(r.IMEI, r.DefinitionID, r.AlarmID) })),
	store.KindAlarmRecipients: kindOf(tableList("alarm_recipients"),
		listed(func(t *tx) ([]store.AlarmRecipient, error) { return alarmRecipients{t}.List() }),
		insertedAs("alarm_recipients", func(r *store.AlarmRecipient) *int64 { return &r.ID },
			func(t *tx, r *store.AlarmRecipient) error { return alarmRecipients{t}.Insert(r) })),

	store.KindMediaFiles: kindOf(tableList("media_files"),
		selected(`SELECT `+mediaFileColumns+`, pending FROM media_files ORDER BY `+mediaKeyOrder,
			func(row pgx.Row) (*store.StoredMediaFile, error) {
				var r store.StoredMediaFile
				m, err := scanMediaFile(row, &r.Pending)
				r.MediaFile = m
				return &r, err
			}),
		copied("media_files", mediaFileColumns+", pending", rows(func(r *store.StoredMediaFile) []any {
			return mediaFileArgs(&r.MediaFile, r.Pending)
		}))),
	store.KindMediaEventRefs: kindOf(tableList("media_event_refs"),
		selected(`SELECT `+mediaEventRefColumns+` FROM media_event_refs ORDER BY `+mediaEventRefColumns,
			scanned(func(r *store.MediaEventRef) []any {
				return []any{&r.Ref.IMEI, &r.Ref.FileType, &r.Ref.CameraID, &r.Ref.FileID, &r.EventID}
			})),
		copied("media_event_refs", mediaEventRefColumns, rows(func(r *store.MediaEventRef) []any {
			return mediaEventRefArgs(r.Ref, r.EventID)
		}))),
	store.KindMediaAges: kindOf(tableList("media_ages"),
		selected(`SELECT `+mediaAgeColumns+` FROM media_ages ORDER BY `+mediaAgeColumns,
			func(row pgx.Row) (*store.MediaAge, error) {
				var a store.MediaAge
				var class string
				if err := row.Scan(&class, &a.Ref.IMEI, zeroTime{&a.RecordedAt}, &a.Ref.FileType, &a.Ref.CameraID,
					&a.Ref.FileID); err != nil {
					return nil, err
				}
				if len(class) != 1 {
					return nil, errors.New("store: a media age of no class")
				}
				a.Class = store.MediaClass(class[0])
				return &a, nil
			}),
		copied("media_ages", mediaAgeColumns, rows(func(a *store.MediaAge) []any { return mediaAgeArgs(*a) }))),
	store.KindMediaTrash: kindOf(tableList("media_trash"),
		selected(`SELECT blob_key FROM media_trash ORDER BY blob_key`,
			scanned(func(r *store.MediaTrashEntry) []any { return []any{&r.Blob} })),
		each(func(t *tx, r *store.MediaTrashEntry) error { return mediaTrash{t}.Add(r.Blob) })),
	store.KindAuxCameras: kindOf(tableList("aux_camera_lists", "aux_cameras"),
		byKey(`SELECT imei FROM aux_camera_lists WHERE imei > $1 ORDER BY imei LIMIT $2`,
			func(t *tx, imei string) (*store.AuxCameraList, error) {
				cams, err := auxCameras{t}.Get(imei)
				return &store.AuxCameraList{IMEI: imei, Cameras: cams}, err
			}),
		each(func(t *tx, r *store.AuxCameraList) error { return auxCameras{t}.Put(r.IMEI, r.Cameras) })),
	store.KindDataUsage: kindOf(tableList("data_usage_periods"),
		selected(`SELECT imei, `+dataUsageColumns+` FROM data_usage_periods ORDER BY imei, period_start`,
			func(row pgx.Row) (*store.DataUsagePeriod, error) {
				var p store.DataUsagePeriod
				return &p, scanDataUsage(row, &p, &p.IMEI)
			}),
		copied("data_usage_periods", "imei, "+dataUsageColumns, rows(dataUsageArgs))),
	store.KindDeviceLinks: kindOf(tableList("device_links"),
		func(t *tx, yield func(*store.DeviceLink) bool) error {
			err := deviceLinks{t}.Each(func(l *store.DeviceLink) error {
				if !yield(l) {
					return errStop
				}
				return nil
			})
			if errors.Is(err, errStop) {
				return nil
			}
			return err
		},
		each(func(t *tx, l *store.DeviceLink) error { return deviceLinks{t}.Put(l) })),
	store.KindEventMail: kindOf(tableList("event_mail"),
		listed(func(t *tx) ([]store.EventMail, error) { return eventMails{t}.List() }),
		each(func(t *tx, m *store.EventMail) error { return eventMails{t}.Put(m) })),
	store.KindQueuedCommands: kindOf(tableList("queued_commands"),
		selected(`SELECT `+queuedCommandColumns+` FROM queued_commands ORDER BY seq`,
			func(row pgx.Row) (*store.QueuedCommand, error) {
				c, err := scanQueuedCommand(row)
				return &c, err
			}),
		each(func(t *tx, c *store.QueuedCommand) error { return queuedCommands{t}.Add(c) })),

	store.KindAuditEntries: kindOf(tableList("audit_log"),
		selected(`SELECT `+auditColumns+` FROM audit_log ORDER BY id`, scanned(auditFields)),
		copied("audit_log", "id, "+auditRowColumns, rows(func(e *store.AuditEntry) []any {
			return append([]any{e.ID}, auditArgs(e)...)
		}))),
	store.KindMessages: kindOf(tableList("messages"), dumpMessages,
		copied("messages", "seq, "+messageRowColumns, func(m *store.Message) ([]any, error) {
			args, err := messageArgs(m)
			return append([]any{m.Seq}, args...), err
		})),
	store.KindWebhookOutbox: {
		tables: tableList("webhook_outbox"),
		count:  `SELECT count(*) FROM webhook_outbox WHERE cursor_seq <> 0 OR generation <> 0`,
		dump: func(t *tx, yield func(any) bool) error {
			o := webhookOutbox{t}
			var c store.OutboxCounters
			var err error
			if c.Cursor, err = o.Cursor(); err == nil {
				c.Generation, err = o.Generation()
			}
			if err == nil && c != (store.OutboxCounters{}) {
				yield(&c)
			}
			return err
		},
		put: each(func(t *tx, c *store.OutboxCounters) error {
			o := webhookOutbox{t}
			if err := o.SetCursor(c.Cursor); err != nil {
				return err
			}
			return o.setGeneration(c.Generation)
		}),
	},
	store.KindDeliveries: kindOf(tableList("webhook_deliveries"),
		selected(`SELECT `+deliveryColumns+` FROM webhook_deliveries ORDER BY id`, scanRecord[store.Delivery, deliveryRow]),
		copied("webhook_deliveries", deliveryColumns, func(d *store.Delivery) ([]any, error) {
			values, err := deliveryValues(d)
			return append([]any{d.ID}, values...), err
		})),
	store.KindWebhookSubscriptions: kindOf(tableList("webhook_subscriptions"),
		selected(`SELECT `+subscriptionColumns+` FROM webhook_subscriptions ORDER BY id`, scanRecord[store.WebhookSubscription, subscriptionRow]),
		each(func(t *tx, s *store.WebhookSubscription) error { return webhookSubscriptions{t}.Put(s) })),
	store.KindWebhookEndpoints: kindOf(tableList("webhook_endpoints"),
		selected(`SELECT `+endpointColumns+` FROM webhook_endpoints ORDER BY organization_id, url`, scanned(endpointFields)),
		each(func(t *tx, e *store.WebhookEndpoint) error { return webhookEndpoints{t}.Put(e) })),
	store.KindWebhookReceivers: withCount(`SELECT count(DISTINCT organization_id) FROM webhook_receivers`, kindOf(tableList("webhook_receivers"),
		selected(`SELECT organization_id, array_agg(type ORDER BY type) FROM webhook_receivers
			GROUP BY organization_id ORDER BY organization_id`,
			scanned(func(r *store.WebhookReceiverTypes) []any { return []any{&r.OrganizationID, &r.Types} })),
		each(func(t *tx, r *store.WebhookReceiverTypes) error {
			return webhookReceivers{t}.Put(r.OrganizationID, r.Types)
		}))),
})

// dumpAlarms yields the alarms in id order, each with its notes, a page at
// a time (the notes are a second statement, which cannot run while the
// alarms' rows are read).
func dumpAlarms(t *tx, yield func(*store.Alarm) bool) error {
	return paged(func(after int64) ([]store.Alarm, error) {
		page, err := collect(t, scanFields(alarmFields), `SELECT `+alarmColumns+` FROM alarms a WHERE a.id > $1 ORDER BY a.id LIMIT $2`,
			after, recordsPerQuery)
		if err != nil {
			return nil, err
		}
		return page, loadAlarmNotes(t, page)
	}, func(a *store.Alarm) int64 { return a.ID }, yield)
}

// dumpMessages yields the messages in sequence order, a page at a time.
func dumpMessages(t *tx, yield func(*store.Message) bool) error {
	return paged(func(after int64) ([]store.Message, error) { return messages{t}.After(after, recordsPerQuery) },
		func(m *store.Message) int64 { return m.Seq }, yield)
}

// recordsPerQuery is how many records one page of paged holds.
const recordsPerQuery = 500

// paged yields the records of the pages next reads, each the records
// after the key after, at most recordsPerQuery of them, in key order;
// key is a record's key.
func paged[T any](next func(after int64) ([]T, error), key func(*T) int64, yield func(*T) bool) error {
	var after int64
	for {
		page, err := next(after)
		if err != nil {
			return err
		}
		for i := range page {
			if !yield(&page[i]) {
				return nil
			}
		}
		if len(page) < recordsPerQuery {
			return nil
		}
		after = key(&page[len(page)-1])
	}
}
