package bolt

import (
	"bytes"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// How the file keeps each kind of record a copy moves (store.Kinds): the
// buckets of the kind, how its records are read out of them and how one is
// stored again with its identity, through the engine's own writers.

// copyKind is the file's side of one kind of record.
type copyKind struct {
	// buckets are where the kind's records and indexes are: the first
	// holds one key per record, which count counts unless the kind says
	// otherwise.
	buckets [][]byte
	count   func(t *tx) int64
	// dump yields every record, in key order, until yield returns false.
	dump func(t *tx, yield func(any) bool) error
	// put stores every record recs yields, each through step.
	put func(k store.Kind, recs iter.Seq2[any, error], step func(func(*tx) error) error) (int64, error)
}

// kindOf is the copyKind of records of type T.
func kindOf[T any](buckets [][]byte, dump func(t *tx, yield func(*T) bool) error, put func(t *tx, r *T) error) copyKind {
	return copyKind{
		buckets: buckets,
		dump:    func(t *tx, yield func(any) bool) error { return dump(t, func(r *T) bool { return yield(r) }) },
		put: func(k store.Kind, recs iter.Seq2[any, error], step func(func(*tx) error) error) (int64, error) {
			return store.Each(k, recs, func(r *T) error { return step(func(t *tx) error { return put(t, r) }) })
		},
	}
}

// bucketList lists bucket names.
func bucketList(names ...[]byte) [][]byte { return names }

// jsonKind is the copyKind of records of type T kept as JSON, one under
// each key of the first of buckets.
func jsonKind[T any](buckets [][]byte, put func(t *tx, r *T) error) copyKind {
	return kindOf(buckets, func(t *tx, yield func(*T) bool) error {
		return eachJSON(t.bucket(buckets[0]), nil, func(_ []byte, r *T) (bool, error) { return yield(r), nil })
	}, put)
}

// records dumps bucket name, each entry decoded by decode.
func records[T any](name []byte, decode func(k, v []byte) (*T, error)) func(t *tx, yield func(*T) bool) error {
	return func(t *tx, yield func(*T) bool) error {
		return walk(t.bucket(name), nil, func(k, v []byte) (bool, error) {
			r, err := decode(k, v)
			if err != nil {
				return false, err
			}
			return yield(r), nil
		})
	}
}

// openSeries dumps the JSON records of a device series (keys imei, 0,
// start ms), each as wrap makes it of the record and whether bucket open
// names it as its device's open one (an open trip, a checked-in driver).
func openSeries[T, R any](name, open []byte, wrap func(r *T, open bool) *R) func(t *tx, yield func(*R) bool) error {
	return func(t *tx, yield func(*R) bool) error {
		pointers := t.bucket(open)
		return walk(t.bucket(name), nil, func(k, v []byte) (bool, error) {
			imei, _, err := splitIMEI(name, k, 8)
			if err != nil {
				return false, err
			}
			var zero T
			r, err := decodeJSON(k, v, zero)
			if err != nil {
				return false, err
			}
			return yield(wrap(r, bytes.Equal(pointers.Get([]byte(imei)), k))), nil
		})
	}
}

// splitIMEI splits a key that starts with an IMEI and a 0 byte, of which
// rest must be n bytes long (any length when n < 0).
func splitIMEI(bucket, k []byte, n int) (imei string, rest []byte, err error) {
	sep := bytes.IndexByte(k, 0)
	if sep < 0 || (n >= 0 && len(k)-sep-1 != n) {
		return "", nil, fmt.Errorf("store: %s key %x is not of its layout", bucket, k)
	}
	return string(k[:sep]), k[sep+1:], nil
}

// badValue is the error of a value not of its bucket's layout.
func badValue(bucket, k []byte) error {
	return fmt.Errorf("store: the %s value of %x is not of its layout", bucket, k)
}

// copyKinds is the file's side of every kind of store.Kinds.
var copyKinds = map[store.Kind]copyKind{
	store.KindPartners: jsonKind(bucketList(bucketPartners),
		func(t *tx, p *store.Partner) error { return partners{t}.put(p) }),
	store.KindOrganizations: jsonKind(bucketList(bucketOrgs),
		func(t *tx, o *store.Organization) error { return organizations{t}.put(o) }),
	store.KindUsers: jsonKind(bucketList(bucketUsers, bucketUserEmails),
		func(t *tx, u *store.User) error { return users{t}.put(u) }),
	store.KindInviteTokens: kindOf(bucketList(bucketInviteTokens),
		records(bucketInviteTokens, func(k, v []byte) (*store.InviteToken, error) {
			if len(k) != 32 || len(v) != 8 {
				return nil, badValue(bucketInviteTokens, k)
			}
			return &store.InviteToken{Hash: [32]byte(k), UserID: btoi(v)}, nil
		}),
		func(t *tx, r *store.InviteToken) error { return inviteTokens{t}.Put(r.Hash, r.UserID) }),
	store.KindGroups: jsonKind(bucketList(bucketGroups),
		func(t *tx, g *store.Group) error { return groups{t}.put(g) }),
	store.KindDevices: jsonKind(bucketList(bucketDevices, bucketOrgDevices),
		func(t *tx, d *store.Device) error { return devices{t}.Insert(d) }),
	store.KindDeviceOwnerships: kindOf(bucketList(bucketOwnerships),
		records(bucketOwnerships, func(k, v []byte) (*store.DeviceOwnership, error) {
			imei, number, err := splitIMEI(bucketOwnerships, k, 8)
			if err == nil && len(v) != 8 && len(v) != 16 {
				err = badValue(bucketOwnerships, k)
			}
			if err != nil {
				return nil, err
			}
			return decodeOwnership(imei, number, v), nil
		}),
		func(t *tx, o *store.DeviceOwnership) error { return deviceOwnerships{t}.Put(o) }),

	store.KindEvents: jsonKind(bucketList(bucketEvents, bucketDeviceEvents, bucketOrgEvents, bucketOrgEventHours, bucketEventComments),
		func(t *tx, e *store.Event) error { return events{t}.put(e) }),
	store.KindEventDeviceIDs: kindOf(bucketList(bucketEventDeviceIDs),
		records(bucketEventDeviceIDs, func(k, v []byte) (*store.EventDeviceID, error) {
			imei, id, err := splitIMEI(bucketEventDeviceIDs, k, -1)
			if err == nil && len(v) < 8 {
				err = badValue(bucketEventDeviceIDs, k)
			}
			if err != nil {
				return nil, err
			}
			r := decodeEventDeviceID(imei, string(id), v)
			return &r, nil
		}),
		func(t *tx, r *store.EventDeviceID) error { return eventDeviceIDs{t}.Put(*r) }),

	store.KindGPSSamples: kindOf(bucketList(bucketGPS),
		records(bucketGPS, func(k, v []byte) (*store.GPSSample, error) {
			imei, _, err := splitIMEI(bucketGPS, k, 8)
			if err != nil {
				return nil, err
			}
			p, err := decodeGPS(len(imei)+1, k, v)
			if err != nil {
				return nil, err
			}
			return &store.GPSSample{IMEI: imei, Ownership: gpsOwnership(v), Point: p}, nil
		}),
		func(t *tx, s *store.GPSSample) error {
			stored, err := gpsSamples{t}.Insert(s.IMEI, s.Ownership, []store.GPSPoint{s.Point})
			if err == nil && !stored[0] {
				err = store.Conflict("device %s has two GPS samples at %s", s.IMEI, s.Point.Time.Format(time.RFC3339Nano))
			}
			return err
		}),
	store.KindTrips: kindOf(bucketList(bucketTrips, bucketTripOpen),
		openSeries(bucketTrips, bucketTripOpen, func(trip *store.Trip, open bool) *store.StoredTrip {
			return &store.StoredTrip{Trip: *trip, Open: open}
		}),
		func(t *tx, r *store.StoredTrip) error {
			if err := (trips{t}).put(&r.Trip); err != nil || !r.Open {
				return err
			}
			return trips{t}.SetOpen(&r.Trip)
		}),
	store.KindDeviceTracks: kindOf(bucketList(bucketDeviceTracks),
		records(bucketDeviceTracks, func(k, v []byte) (*store.StoredDeviceTrack, error) {
			track, err := decodeJSON(k, v, store.DeviceTrack{})
			if err != nil {
				return nil, err
			}
			return &store.StoredDeviceTrack{IMEI: string(k), Track: *track}, nil
		}),
		func(t *tx, r *store.StoredDeviceTrack) error { return deviceTracks{t}.Put(r.IMEI, &r.Track) }),

	store.KindDrivers: jsonKind(bucketList(bucketDrivers, bucketDriverCodes, bucketDriverThirdParty, bucketDriverQR),
		func(t *tx, d *store.Driver) error { return drivers{t}.put(d, nil) }),
	store.KindDriverSessions: kindOf(bucketList(bucketDriverSessions, bucketDriverCurrent),
		openSeries(bucketDriverSessions, bucketDriverCurrent, func(s *store.DriverSession, open bool) *store.StoredDriverSession {
			return &store.StoredDriverSession{DriverSession: *s, Open: open}
		}),
		func(t *tx, r *store.StoredDriverSession) error {
			if r.Open {
				return driverSessions{t}.Begin(&r.DriverSession)
			}
			_, err := driverSessions{t}.put(&r.DriverSession)
			return err
		}),
	store.KindDriverPinFailures: kindOf(bucketList(bucketPinFailures),
		records(bucketPinFailures, func(k, v []byte) (*store.DriverPinFailures, error) {
			times, err := decodeJSON(k, v, []time.Time(nil))
			if err != nil {
				return nil, err
			}
			return &store.DriverPinFailures{IMEI: string(k), Times: *times}, nil
		}),
		func(t *tx, r *store.DriverPinFailures) error { return driverPinFailures{t}.Put(r.IMEI, r.Times) }),
	store.KindDriverAssignments: jsonKind(bucketList(bucketDriverAssignments, bucketDriverAssignIDs),
		func(t *tx, a *store.DriverAssignment) error { return driverAssignments{t}.put(a) }),

	store.KindAlarms: jsonKind(bucketList(bucketAlarms, bucketAlarmNotes),
		func(t *tx, a *store.Alarm) error { return alarms{t}.Insert(a) }),
	store.KindAlarmTriples: kindOf(bucketList(bucketAlarmTriples),
		records(bucketAlarmTriples, func(k, v []byte) (*store.AlarmTriple, error) {
			imei, rest, err := splitIMEI(bucketAlarmTriples, k, 16)
			if err == nil && len(v) != 8 {
				err = badValue(bucketAlarmTriples, k)
			}
			if err != nil {
				return nil, err
			}
			return &store.AlarmTriple{IMEI: imei, DefinitionID: btoi(rest[:8]),
				CreatedAt: time.UnixMilli(btoi(rest[8:])).UTC(), AlarmID: btoi(v)}, nil
		}),
		func(t *tx, r *store.AlarmTriple) error { return alarms{t}.putTriple(*r) }),
	store.KindOpenAlarms: kindOf(bucketList(bucketAlarmOpen),
		records(bucketAlarmOpen, func(k, v []byte) (*store.OpenAlarm, error) {
			imei, def, err := splitIMEI(bucketAlarmOpen, k, 8)
			if err == nil && len(v) != 8 {
				err = badValue(bucketAlarmOpen, k)
			}
			if err != nil {
				return nil, err
			}
			return &store.OpenAlarm{IMEI: imei, DefinitionID: btoi(def), AlarmID: btoi(v)}, nil
		}),
		func(t *tx, r *store.OpenAlarm) error { return openAlarms{t}.Put(r.IMEI, r.DefinitionID, r.AlarmID) }),
	store.KindAlarmRecipients: jsonKind(bucketList(bucketRecipients),
		func(t *tx, r *store.AlarmRecipient) error { return alarmRecipients{t}.put(r) }),

	store.KindMediaFiles: kindOf(bucketList(bucketMedia, bucketMediaPending),
		func(t *tx, yield func(*store.StoredMediaFile) bool) error {
			pending := t.bucket(bucketMediaPending)
			return walk(t.bucket(bucketMedia), nil, func(k, v []byte) (bool, error) {
				m, err := decodeJSON(k, v, store.MediaFile{})
				if err != nil {
					return false, err
				}
				return yield(&store.StoredMediaFile{MediaFile: *m, Pending: pending.Get(k) != nil}), nil
			})
		},
		func(t *tx, r *store.StoredMediaFile) error { return mediaFiles{t}.Put(&r.MediaFile, r.Pending) }),
	store.KindMediaEventRefs: kindOf(bucketList(bucketMediaEvents),
		records(bucketMediaEvents, func(k, _ []byte) (*store.MediaEventRef, error) {
			if len(k) < 10 || k[len(k)-9] != 0 {
				return nil, fmt.Errorf("store: %s key %x is not of its layout", bucketMediaEvents, k)
			}
			ref, ok := store.ParseMediaRef(string(k[:len(k)-9]))
			if !ok {
				return nil, fmt.Errorf("store: %s key %x names no media file", bucketMediaEvents, k)
			}
			return &store.MediaEventRef{Ref: ref, EventID: btoi(k[len(k)-8:])}, nil
		}),
		func(t *tx, r *store.MediaEventRef) error { return mediaEventRefs{t}.Add(r.Ref, r.EventID) }),
	store.KindMediaAges: kindOf(bucketList(bucketMediaAge),
		records(bucketMediaAge, func(k, _ []byte) (*store.MediaAge, error) {
			_, rest, err := splitIMEI(bucketMediaAge, k, -1)
			if err == nil && len(rest) < 10 {
				err = fmt.Errorf("store: %s key %x is not of its layout", bucketMediaAge, k)
			}
			if err != nil {
				return nil, err
			}
			ref, ok := store.ParseMediaRef(string(rest[9:]))
			if !ok {
				return nil, fmt.Errorf("store: %s key %x names no media file", bucketMediaAge, k)
			}
			return &store.MediaAge{Ref: ref, Class: store.MediaClass(rest[0]),
				RecordedAt: time.UnixMilli(btoi(rest[1:9])).UTC()}, nil
		}),
		func(t *tx, a *store.MediaAge) error { return mediaAges{t}.Add(*a) }),
	store.KindMediaTrash: kindOf(bucketList(bucketMediaTrash),
		records(bucketMediaTrash, func(k, _ []byte) (*store.MediaTrashEntry, error) {
			return &store.MediaTrashEntry{Blob: string(k)}, nil
		}),
		func(t *tx, r *store.MediaTrashEntry) error { return mediaTrash{t}.Add(r.Blob) }),
	store.KindAuxCameras: kindOf(bucketList(bucketAuxCameras),
		records(bucketAuxCameras, func(k, v []byte) (*store.AuxCameraList, error) {
			cams, err := decodeJSON(k, v, []store.AuxCamera(nil))
			if err != nil {
				return nil, err
			}
			return &store.AuxCameraList{IMEI: string(k), Cameras: *cams}, nil
		}),
		func(t *tx, r *store.AuxCameraList) error { return auxCameras{t}.Put(r.IMEI, r.Cameras) }),
	store.KindDataUsage: jsonKind(bucketList(bucketDataUsage),
		func(t *tx, p *store.DataUsagePeriod) error { return dataUsagePeriods{t}.Put(p) }),
	store.KindDeviceLinks: jsonKind(bucketList(bucketDeviceLinks),
		func(t *tx, l *store.DeviceLink) error { return deviceLinks{t}.Put(l) }),
	store.KindEventMail: jsonKind(bucketList(bucketEventMail),
		func(t *tx, m *store.EventMail) error { return eventMails{t}.Put(m) }),
	store.KindQueuedCommands: jsonKind(bucketList(bucketDeviceCommands),
		func(t *tx, c *store.QueuedCommand) error { return queuedCommands{t}.Add(c) }),

	store.KindAuditEntries: jsonKind(bucketList(bucketAudit),
		func(t *tx, e *store.AuditEntry) error { return auditEntries{t}.put(e) }),
	store.KindMessages: jsonKind(bucketList(bucketMessages),
		func(t *tx, m *store.Message) error { return messages{t}.put(m) }),
	store.KindWebhookOutbox: outboxKind,
	store.KindDeliveries: jsonKind(bucketList(bucketDeliveries, bucketQueue, bucketOrgDeliveries),
		func(t *tx, d *store.Delivery) error { return deliveries{t}.put(d) }),
	store.KindWebhookSubscriptions: jsonKind(bucketList(bucketWebhookSubs),
		func(t *tx, s *store.WebhookSubscription) error { return webhookSubscriptions{t}.Put(s) }),
	store.KindWebhookEndpoints: kindOf(bucketList(bucketWebhookEndpts),
		records(bucketWebhookEndpts, func(k, v []byte) (*store.WebhookEndpoint, error) {
			if len(k) < 9 || k[8] != 0 {
				return nil, fmt.Errorf("store: %s key %x is not of its layout", bucketWebhookEndpts, k)
			}
			return decodeEndpoint(btoi(k[:8]), string(k[9:]), v)
		}),
		func(t *tx, e *store.WebhookEndpoint) error { return webhookEndpoints{t}.Put(e) }),
	store.KindWebhookReceivers: kindOf(bucketList(bucketWebhookReceivers),
		records(bucketWebhookReceivers, func(k, v []byte) (*store.WebhookReceiverTypes, error) {
			if len(k) != 8 {
				return nil, fmt.Errorf("store: %s key %x is not of its layout", bucketWebhookReceivers, k)
			}
			return &store.WebhookReceiverTypes{OrganizationID: btoi(k), Types: strings.Split(string(v), ",")}, nil
		}),
		func(t *tx, r *store.WebhookReceiverTypes) error {
			return webhookReceivers{t}.Put(r.OrganizationID, r.Types)
		}),
	store.KindOAuthClients: jsonKind(bucketList(bucketOAuthClients),
		func(t *tx, c *store.OAuthClient) error { return oauthClients{t}.put(c) }),
}

// outboxKind is the outbox's counters: one record while either is not 0.
var outboxKind = func() copyKind {
	counters := func(t *tx) store.OutboxCounters {
		o := webhookOutbox{t}
		return store.OutboxCounters{Cursor: o.counter(keyCursor), Generation: o.counter(keyGeneration)}
	}
	k := kindOf(bucketList(bucketOutbox),
		func(t *tx, yield func(*store.OutboxCounters) bool) error {
			if c := counters(t); c != (store.OutboxCounters{}) {
				yield(&c)
			}
			return nil
		},
		func(t *tx, c *store.OutboxCounters) error {
			o := webhookOutbox{t}
			if err := o.put(keyCursor, c.Cursor); err != nil {
				return err
			}
			return o.put(keyGeneration, c.Generation)
		})
	k.count = func(t *tx) int64 {
		if counters(t) == (store.OutboxCounters{}) {
			return 0
		}
		return 1
	}
	return k
}()

// copySequences are the buckets whose sequence is each store.Sequence.
var copySequences = map[store.Sequence][]byte{
	store.SeqPartners:             bucketPartners,
	store.SeqOrganizations:        bucketOrgs,
	store.SeqUsers:                bucketUsers,
	store.SeqGroups:               bucketGroups,
	store.SeqOwnerships:           bucketDevices,
	store.SeqEvents:               bucketEvents,
	store.SeqEventComments:        bucketEventComments,
	store.SeqTrips:                bucketTrips,
	store.SeqDrivers:              bucketDrivers,
	store.SeqDriverAssignments:    bucketDriverAssignments,
	store.SeqAlarms:               bucketAlarms,
	store.SeqAlarmNotes:           bucketAlarmNotes,
	store.SeqAlarmRecipients:      bucketRecipients,
	store.SeqQueuedCommands:       bucketDeviceCommands,
	store.SeqAuditEntries:         bucketAudit,
	store.SeqMessages:             bucketMessages,
	store.SeqDeliveries:           bucketDeliveries,
	store.SeqWebhookSubscriptions: bucketWebhookSubs,
}
