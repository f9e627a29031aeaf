package store_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// copySeed is what seedCopy wrote: the ids and keys the readers of the
// copied stores ask for.
type copySeed struct {
	partner, other       int64
	org, org2            int64
	users                []int64
	inviteToken          string
	group                int64
	dev, dev2, moved     *Device
	events               []int64
	alarm                int64
	driver               int64
	media                MediaRef
	start, end           time.Time
	subscriptionURL      string
	deliveryURL          string
	recipient            int64
	driverQR, driverCode string
}

// seedCopy fills db with at least one record of every kind a copy moves,
// through the store's rules where they write the kind and through the
// engine's records where only a device or the dispatcher would: two
// partners, two organizations, users and an open invitation, a group,
// devices (one removed and added again), events with files, comments and
// device ids, GPS with geofences, trips (one open), settings, a driver
// with a session, wrong PINs and an assignment, alarms with notes, health,
// recipients, media, auxiliary cameras, billing, data usage, links,
// credentials, queued commands, messages, deliveries, the webhook
// configuration and OAuth clients. Times are whole milliseconds, which
// every engine keeps.
func seedCopy(t *testing.T, db *DB, clock *storetest.Clock) copySeed {
	t.Helper()
	s := copySeed{start: clock.Now()}
	update := func(actor Actor, fn func(tx *Tx) error) {
		t.Helper()
		clock.Advance(1500 * time.Millisecond)
		if err := db.Update(t.Context(), actor, fn); err != nil {
			t.Fatal(err)
		}
	}
	records := func(fn func(rec Records) error) {
		t.Helper()
		if err := db.Engine().Update(t.Context(), fn); err != nil {
			t.Fatal(err)
		}
	}
	system := Actor{Source: "test"}
	update(system, func(tx *Tx) error {
		p, err := tx.CreatePartner("Acme Telematics")
		if err != nil {
			return err
		}
		q, err := tx.CreatePartner("Beta Fleet Services")
		if err != nil {
			return err
		}
		s.partner, s.other = p.ID, q.ID
		o, err := tx.CreateOrganization(p.ID, "Fleet one", []byte("sso salt"))
		if err != nil {
			return err
		}
		o.ExclusivePartnerOnly = false
		o.InvitedPartnerIDs = []int64{q.ID, 99}
		o.Retention.PurgeDays = 90
		if err := tx.UpdateOrganization(o); err != nil {
			return err
		}
		o2, err := tx.CreateOrganization(q.ID, "Fleet two", nil)
		if err != nil {
			return err
		}
		s.org, s.org2 = o.ID, o2.ID
		for _, u := range []*User{
			{Email: "ops@acme.example", Name: "Ops", PartnerID: p.ID, PasswordHash: []byte("$2a$04$hash")},
			{Email: "viewer@fleet.example", Name: "Viewer", PartnerID: p.ID, OrganizationID: o.ID, AccessLevel: "viewer"},
			{Email: "invited@fleet.example", OrganizationID: o.ID, PartnerID: p.ID, AccessLevel: "editor"},
		} {
			if err := tx.CreateUser(u); err != nil {
				return err
			}
			s.users = append(s.users, u.ID)
		}
		s.inviteToken = "invitation-token-1"
		invited, err := tx.User(s.users[2])
		if err != nil {
			return err
		}
		if err := tx.SetInviteToken(invited, s.inviteToken, clock.Now().Add(72*time.Hour)); err != nil {
			return err
		}
		g, err := tx.CreateGroup(o.ID, "Vans")
		if err != nil {
			return err
		}
		s.group = g.ID
		s.dev = &Device{IMEI: fxIMEI(1), Name: "Van 1", OrganizationID: o.ID, PartnerID: p.ID, GroupID: g.ID}
		s.dev2 = &Device{IMEI: fxIMEI(2), Name: "Van 2", OrganizationID: o.ID, PartnerID: p.ID}
		s.moved = &Device{IMEI: fxIMEI(3), Name: "Truck 3", OrganizationID: o.ID, PartnerID: p.ID}
		for _, d := range []*Device{s.dev, s.dev2, s.moved} {
			if err := tx.AddDevice(d); err != nil {
				return err
			}
		}
		return nil
	})
	// A device that changed hands leaves an ended ownership behind.
	update(system, func(tx *Tx) error { return tx.RemoveDevice(s.moved.IMEI) })
	update(system, func(tx *Tx) error {
		s.moved = &Device{IMEI: s.moved.IMEI, Name: "Truck 3", OrganizationID: s.org2, PartnerID: s.other}
		return tx.AddDevice(s.moved)
	})
	update(system, func(tx *Tx) error {
		if err := tx.PutWebhookSettings(&WebhookSettings{OrganizationID: s.org,
			EventURLs: []string{"https://hooks.fleet.example/events"}, GPSURLs: []string{"https://hooks.fleet.example/gps"},
			NotifyMediaAvailable: true, SystemMessages: []SystemMessagesWebhook{{URL: "https://hooks.fleet.example/system"}}}); err != nil {
			return err
		}
		s.subscriptionURL = "https://hooks.fleet.example/device"
		if _, err := tx.SaveWebhookSubscription(WebhookSubscription{OrganizationID: s.org, IMEI: s.dev.IMEI,
			URL: s.subscriptionURL, Type: "event"}); err != nil {
			return err
		}
		_, _, err := tx.EnsureWebhookSecret(s.org, func() []byte { return []byte("0123456789abcdef0123456789abcdef") })
		return err
	})
	update(system, func(tx *Tx) error {
		if err := tx.CreateOAuthClient(&OAuthClient{ID: "client-partner", Name: "Dispatch", PartnerID: s.partner},
			"partner-client-secret-0123456789abcdef"); err != nil {
			return err
		}
		return tx.CreateOAuthClient(&OAuthClient{ID: "client-org", PartnerID: s.partner, OrganizationID: s.org},
			"organization-client-secret-0123456789abcdef")
	})
	update(system, func(tx *Tx) error {
		_, err := tx.RotateOAuthClientSecret("client-org", "rotated-client-secret-0123456789abcdef")
		return err
	})
	// Events: files, a device id, a comment; GPS inside and outside a
	// geofence; a trip that closed and one still open.
	at := func(sec int) time.Time { return s.start.Add(time.Duration(sec)*time.Second + 250*time.Millisecond) }
	update(system, func(tx *Tx) error {
		if err := tx.SetGeofences(s.dev.IMEI, []Geofence{{ID: 7, Name: "Depot", Lat: 48.1, Lon: 11.5, Radius: 500}}); err != nil {
			return err
		}
		if _, err := tx.TrackGPS(s.dev, []GPSPoint{
			{Time: at(10), Lat: 48.1, Lon: 11.5, Speed: 20, Accuracy: 5, Heading: 90},
			{Time: at(20), Lat: 48.2, Lon: 11.6, Alt: 500, Speed: 60, Accuracy: 4},
		}); err != nil {
			return err
		}
		_, err := tx.AddGPS(s.dev2, []GPSPoint{{Time: at(15), Lat: 52.5, Lon: 13.4, Speed: 10, Accuracy: 3}})
		return err
	})
	// The deceleration queues an e-mail to its recipient.
	update(system, func(tx *Tx) error {
		return tx.SetEventRecipients(s.dev.IMEI, "deceleration", []string{"safety@fleet.example"})
	})
	device := Actor{Source: "device"}
	for i, in := range []EventInput{
		{Type: "accOn", Time: at(30), Lat: 48.1, Lon: 11.5, DeviceEventID: "e-1"},
		{Type: "deceleration", Time: at(40), Lat: 48.15, Lon: 11.55, Speed: 50, DeviceEventID: "e-2",
			Files: []EventFile{{CameraID: 1, FileID: "clip-1.mp4", FileType: "video"}, {CameraID: 2, FileID: "clip-2.mp4", FileType: "video"}}},
		{Type: "accOff", Time: at(50), Lat: 48.2, Lon: 11.6, DeviceEventID: "e-3"},
		{Type: "accOn", Time: at(60), Lat: 48.2, Lon: 11.6, DeviceEventID: "e-4"},
	} {
		update(device, func(tx *Tx) error {
			res, err := tx.IngestEvent(s.dev, in)
			if err != nil {
				return fmt.Errorf("event %d: %w", i, err)
			}
			s.events = append(s.events, res.Event.ID)
			return tx.ApplyTripEvent(s.dev, in)
		})
	}
	s.media = MediaRef{IMEI: s.dev.IMEI, CameraID: 1, FileType: "video", FileID: "clip-1.mp4"}
	update(Actor{Source: "test", UserID: s.users[1], OrganizationID: s.org, PartnerID: s.partner, Email: "viewer@fleet.example"},
		func(tx *Tx) error {
			_, err := tx.ReviewEvent(s.events[1], EventReview{Comment: "Checked the clip", AudienceName: "organization"})
			return err
		})
	update(system, func(tx *Tx) error {
		_, err := tx.CompleteUpload(MediaUpload{Ref: s.media, Blob: "blob/clip-1", Size: 2048, ContentType: "video/mp4"})
		return err
	})
	update(system, func(tx *Tx) error {
		// A second upload's bytes replace the first's, which go to the trash.
		_, err := tx.CompleteUpload(MediaUpload{Ref: MediaRef{IMEI: s.dev.IMEI, CameraID: 1, FileType: "adas", FileID: "calib.jpg"},
			Blob: "blob/calib", Size: 100, ContentType: "image/jpeg"})
		return err
	})
	// Settings, drivers, alarms and device state.
	update(system, func(tx *Tx) error {
		on := true
		orgControl := &DeviceControl{AutoCalibration: &on, PinCodes: &PinCodes{Salt: "s", AdminPinHash: "a", DriverPinHash: "d"}}
		if err := tx.PutOrgSettings(&OrgSettings{OrganizationID: s.org, ForbidLegacyFirmware: true, Control: orgControl}, "test"); err != nil {
			return err
		}
		ds, err := tx.DeviceSettings(s.dev2.IMEI)
		if err != nil {
			return err
		}
		ds.PrivacyMode = "off"
		ds.Control = &DeviceControl{Mode: ModeDemo, OTGEnabled: &on, TailgatingCoolOffMinutes: 20,
			ADAS: &ADASMeasurements{CameraHeight: 150, VehicleWidth: 180}, CameraNames: map[int]string{50: "Trailer"}}
		if err := tx.PutDeviceSettings(ds, "test"); err != nil {
			return err
		}
		if err := tx.SetCameraRetention(s.dev2.IMEI, []CameraRetention{{CameraID: 2, RetentionMinutes: 90}}); err != nil {
			return err
		}
		if err := tx.SetAlbumEnabled(s.org, true); err != nil {
			return err
		}
		if err := tx.SetAlbumImageStatus(s.org, AlbumImageID(s.dev.IMEI, "cab1"), AlbumFamiliar); err != nil {
			return err
		}
		d := &Driver{OrganizationID: s.org, ThirdPartyID: "drv-1", FirstName: "Ada", LastName: "Lovelace", IsActive: true}
		if err := tx.CreateDriver(d); err != nil {
			return err
		}
		s.driver, s.driverQR, s.driverCode = d.ID, d.QRPayload, d.Code
		if err := tx.AssignDriver(&DriverAssignment{OrganizationID: s.org, DriverID: d.ID, IMEI: s.dev2.IMEI,
			Start: at(100), End: at(7200)}); err != nil {
			return err
		}
		r := &AlarmRecipient{Kind: RecipientAlarms, Email: "alarms@fleet.example", PartnerID: s.partner,
			OrganizationID: s.org, AlarmDefinitions: []int64{AlarmSDCardMissing}, ReportIntervalSeconds: 3600}
		if err := tx.AddAlarmRecipient(r); err != nil {
			return err
		}
		s.recipient = r.ID
		if err := tx.RecordAuxPairing(s.dev, []AuxCamera{{CameraID: 50, SerialNumber: "AUX-1", Kind: "wifi", Paired: true}}); err != nil {
			return err
		}
		if err := tx.SetAuxBilling(s.dev.IMEI, AuxBillingEnable); err != nil {
			return err
		}
		if err := tx.RecordDataUsage(s.dev.IMEI, DataUsage{PeriodStart: at(-3600), BytesUp: 1000, BytesDown: 5000}); err != nil {
			return err
		}
		if err := tx.PutDeviceLink(&DeviceLink{IMEI: s.dev.IMEI, Presence: PresenceOnline, ConnectionID: "c-1",
			ConnectedAt: at(5), LastSeen: at(60), ProtocolVersion: 5, Firmware: "3.14.0",
			ReportedConfig: json.RawMessage(`{"b": 1,  "a": [2, 1]}`)}); err != nil {
			return err
		}
		token := sha256.Sum256([]byte("device token"))
		if err := tx.IssueDeviceToken(s.dev.IMEI, token[:], s.start.Unix()); err != nil {
			return err
		}
		return tx.QueueCommand(&QueuedCommand{ID: "cmd-1", IMEI: s.dev.IMEI, Name: "reboot", Args: json.RawMessage(`{"delay": 5}`)})
	})
	update(device, func(tx *Tx) error {
		// A check-in by QR, then a wrong PIN on the other device.
		in := EventInput{Type: "driverCheckIn", Time: at(200), Lat: 48.2, Lon: 11.6, QRCode: s.driverQR, DeviceEventID: "e-5"}
		ts, err := tx.ApplyDriverEvent(s.dev, in)
		if err != nil {
			return err
		}
		if err := tx.RecordDriverEvents(s.dev, ts, in); err != nil {
			return err
		}
		bad := EventInput{Type: "driverCheckIn", Time: at(210), Lat: 52.5, Lon: 13.4, PinCode: "00000", DeviceEventID: "e-6"}
		if s.driverCode == "00000" {
			bad.PinCode = "99999"
		}
		_, err = tx.ApplyDriverEvent(s.dev2, bad)
		return err
	})
	update(device, func(tx *Tx) error {
		sd := false
		alarms, err := tx.ApplyHealthAlarms(s.dev, DeviceHealth{SDCard: &SDCardHealth{Present: sd}, ReportedAt: at(300)})
		if err != nil {
			return err
		}
		if len(alarms) == 0 {
			return fmt.Errorf("a device without an SD card raised no alarm")
		}
		s.alarm = alarms[0].ID
		return nil
	})
	update(Actor{Source: "test", UserID: s.users[0], PartnerID: s.partner, Email: "ops@acme.example"}, func(tx *Tx) error {
		if _, err := tx.CommentOnAlarm(s.alarm, "Card ordered"); err != nil {
			return err
		}
		_, err := tx.ActOnAlarm(s.alarm, "read")
		return err
	})
	// What the webhook dispatcher writes: deliveries, its cursor, an
	// endpoint's state; and the records only a device's reports write.
	update(system, func(tx *Tx) error {
		msgs, err := tx.MessagesAfter(0, 0)
		if err != nil {
			return err
		}
		if len(msgs) == 0 {
			return fmt.Errorf("no message was recorded")
		}
		s.deliveryURL = "https://hooks.fleet.example/events"
		body := json.RawMessage(`{"webhookId": "w-1",  "data": {"z": 1, "a": 2}}`)
		if err := tx.EnqueueDelivery(&Delivery{OrganizationID: s.org, URL: s.deliveryURL, MessageSeq: msgs[0].Seq,
			WebhookID: "w-1", Type: "event", IMEI: s.dev.IMEI, MessageTime: msgs[0].Time, Status: DeliveryPending,
			NextAttemptAt: at(400), Body: body}); err != nil {
			return err
		}
		if err := tx.EnqueueDelivery(&Delivery{OrganizationID: s.org, URL: s.deliveryURL, MessageSeq: msgs[0].Seq,
			WebhookID: "w-2", Type: "event", MessageTime: msgs[0].Time, Status: DeliveryDelivered, Attempts: 1,
			FirstAttemptAt: at(401), LastAttemptAt: at(401), FinishedAt: at(401), LastStatusCode: 200, Body: body,
			Log: []DeliveryAttempt{{Time: at(401), StatusCode: 200, DurationMS: 12}}}); err != nil {
			return err
		}
		if err := tx.SetWebhookCursor(msgs[0].Seq); err != nil {
			return err
		}
		return tx.PutWebhookEndpoint(&WebhookEndpoint{OrganizationID: s.org, URL: s.deliveryURL, Failures: 2,
			LastFailureAt: at(402), LastError: "503 Service Unavailable"})
	})
	records(func(rec Records) error {
		if err := rec.WebhookOutbox().IncrementGeneration(); err != nil {
			return err
		}
		if err := rec.Hotspots().Put(&HotspotState{IMEI: s.dev.IMEI, On: true, Password: "secret-pass",
			PasswordChangedAt: at(500)}); err != nil {
			return err
		}
		return rec.MediaTrash().Add("blob/left-over")
	})
	s.end = clock.Now()
	return s
}
