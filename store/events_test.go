package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// eventFixture is a store with two partners sharing one organization.
type eventFixture struct {
	t       testing.TB
	db      *DB
	mu      sync.Mutex
	now     time.Time
	org     *Organization
	partner int64
	other   int64
	dev     *Device // partner's device
	dev2    *Device // partner's second device
	foreign *Device // other partner's device in the same organization
}

// eventIMEI returns the n-th test IMEI: 14 digits and a Luhn check digit.
func eventIMEI(n int) string {
	body := fmt.Sprintf("35204510%06d", n)
	for d := 0; d <= 9; d++ {
		if s := body + string(rune('0'+d)); ValidIMEI(s) {
			return s
		}
	}
	panic("no check digit")
}

var eventT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newEventFixture(t testing.TB) *eventFixture {
	f := &eventFixture{t: t, now: eventT0}
	db := storetest.Open(t, storetest.WithClock(f.clock))
	f.db = db
	err := db.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error {
		p, err := tx.CreatePartner("P")
		if err != nil {
			return err
		}
		q, err := tx.CreatePartner("Q")
		if err != nil {
			return err
		}
		f.partner, f.other = p.ID, q.ID
		if f.org, err = tx.CreateOrganization(p.ID, "Fleet", nil); err != nil {
			return err
		}
		f.org.PartnerIDs = append(f.org.PartnerIDs, q.ID)
		f.org.ExclusivePartnerOnly = false
		if err := tx.UpdateOrganization(f.org); err != nil {
			return err
		}
		for i, d := range []**Device{&f.dev, &f.dev2, &f.foreign} {
			owner := p.ID
			if i == 2 {
				owner = q.ID
			}
			*d = &Device{IMEI: eventIMEI(i + 1), Name: fmt.Sprintf("Truck %d", i+1), OrganizationID: f.org.ID, PartnerID: owner}
			if err := tx.AddDevice(*d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *eventFixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *eventFixture) update(fn func(tx *Tx) error) {
	f.t.Helper()
	if err := f.db.Update(f.t.Context(), Actor{Source: "test"}, fn); err != nil {
		f.t.Fatal(err)
	}
}

// ingest ingests in on dev and fails the test on an error.
func (f *eventFixture) ingest(dev *Device, in EventInput) IngestResult {
	f.t.Helper()
	var res IngestResult
	f.update(func(tx *Tx) error {
		var err error
		res, err = tx.IngestEvent(dev, in)
		return err
	})
	return res
}

// settings changes the device's own settings, starting from its effective ones.
// recipients makes emails the recipients of eventType on the fixture's device.
func (f *eventFixture) recipients(eventType string, emails ...string) {
	f.t.Helper()
	f.update(func(tx *Tx) error { return tx.SetEventRecipients(f.dev.IMEI, eventType, emails) })
}

// eventMail returns the queued event e-mails.
func (f *eventFixture) eventMail() []EventMail {
	f.t.Helper()
	var out []EventMail
	if err := f.db.View(f.t.Context(), func(tx *Tx) (err error) { out, err = tx.QueuedEventMail(); return err }); err != nil {
		f.t.Fatal(err)
	}
	return out
}

func (f *eventFixture) settings(dev *Device, fn func(*DeviceSettings)) {
	f.t.Helper()
	f.update(func(tx *Tx) error {
		eff, err := tx.EffectiveSettings(dev.IMEI)
		if err != nil {
			return err
		}
		ds, err := tx.DeviceSettings(dev.IMEI)
		if err != nil {
			return err
		}
		ds.Device, ds.Events, ds.Privacy = &eff.Device, &eff.Events, &eff.Privacy
		fn(ds)
		return tx.PutDeviceSettings(ds, "test.settings")
	})
}

// messages returns the outbox messages of kind.
func (f *eventFixture) messages(kind string) []Message {
	f.t.Helper()
	all := allMessages(f.t, f.db)
	var out []Message
	for _, m := range all {
		if m.Kind == kind {
			out = append(out, m)
		}
	}
	return out
}

func (f *eventFixture) eventCount(dev *Device) int {
	f.t.Helper()
	var n int
	f.update(func(tx *Tx) error {
		_, total, err := tx.DeviceEvents(dev.IMEI, eventT0.Add(-24*time.Hour), eventT0.Add(24*time.Hour), Page{Limit: 1})
		n = total
		return err
	})
	return n
}

func twoFiles(id string) []EventFile {
	return []EventFile{{CameraID: 1, FileID: id, FileType: FileVideo}, {CameraID: 2, FileID: id, FileType: FileVideo}}
}

func TestIngestEventRules(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		off := false
		tests := []struct {
			name      string
			settings  func(*DeviceSettings)
			in        EventInput
			dropped   string
			files     int
			webhook   bool
			checkSelf func(t *testing.T, e *Event)
		}{
			{name: "driving event with two cameras", in: EventInput{Type: EventDeceleration, Files: twoFiles("100")},
				files: 2, webhook: true},
			{name: "event disabled in the event config is neither created nor reported",
				settings: func(s *DeviceSettings) { s.Events.Events = map[string]EventSetting{EventObstruction: {Enabled: false}} },
				in:       EventInput{Type: EventObstruction, Speed: 40}, dropped: DropEventDisabled},
			{name: "privacy allEventsEnabled false stops every event",
				settings: func(s *DeviceSettings) { s.Privacy.AllEventsEnabled = false },
				in:       EventInput{Type: EventAccident}, dropped: DropPrivacyEvents},
			{name: "privacy allEventsEnabled false stops MV+AI even with mvaiEnabled",
				settings: func(s *DeviceSettings) { s.Privacy.AllEventsEnabled, s.Privacy.MvaiEnabled = false, true },
				in:       EventInput{Type: EventCellPhoneUse, Speed: 60}, dropped: DropPrivacyEvents},
			{name: "mvaiEnabled false stops MV+AI",
				settings: func(s *DeviceSettings) { s.Privacy.MvaiEnabled = false },
				in:       EventInput{Type: EventSmoking, Speed: 60}, dropped: DropMVAIDisabled},
			{name: "MV+AI minimum speed below 5 km/h creates no MV+AI events",
				settings: func(s *DeviceSettings) { s.Events.MvaiMinSpeedKmh = 4 },
				in:       EventInput{Type: EventTailgating, Speed: 60}, dropped: DropMVAIMinSpeed},
			{name: "MV+AI minimum speed below 5 km/h applies to MV+AI beeps",
				settings: func(s *DeviceSettings) { s.Events.MvaiMinSpeedKmh = 0 },
				in:       EventInput{Type: EventCellPhoneUseBeep, Speed: 60}, dropped: DropMVAIMinSpeed},
			{name: "MV+AI minimum speed below 5 km/h leaves other events",
				settings: func(s *DeviceSettings) { s.Events.MvaiMinSpeedKmh = 0 },
				in:       EventInput{Type: EventAcceleration, Files: twoFiles("101")}, files: 2, webhook: true},
			{name: "per-camera privacy flag drops that camera's media",
				settings: func(s *DeviceSettings) { s.Privacy.Cameras = map[int]bool{2: off} },
				in:       EventInput{Type: EventButton, Files: twoFiles("102")}, files: 1, webhook: true,
				checkSelf: func(t *testing.T, e *Event) {
					if e.Files[0].CameraID != 1 {
						t.Fatalf("kept camera %d", e.Files[0].CameraID)
					}
				}},
			{name: "beep events never get media and are not sent to webhooks",
				in: EventInput{Type: EventDistractedDriverBeep, Speed: 50, Files: twoFiles("103")}},
			{name: "a beep is off when its main event is",
				settings: func(s *DeviceSettings) { s.Events.Events = map[string]EventSetting{EventSmoking: {Enabled: false}} },
				in:       EventInput{Type: EventSmokingBeep, Speed: 50}, dropped: DropEventDisabled},
			{name: "accOn is text only", in: EventInput{Type: EventAccOn, Files: twoFiles("104")}, webhook: true},
			{name: "accOff is text only", in: EventInput{Type: EventAccOff, Files: twoFiles("105")}, webhook: true},
			{name: "sdCardFormatted carries the SD card UUID and manufacturer",
				in:      EventInput{Type: EventSDCardFormatted, SDCard: &SDCardInfo{UUID: "5f1c-22ab", Manufacturer: "SanDisk"}},
				webhook: true,
				checkSelf: func(t *testing.T, e *Event) {
					if e.SDCard == nil || e.SDCard.UUID != "5f1c-22ab" || e.SDCard.Manufacturer != "SanDisk" {
						t.Fatalf("sd card %+v", e.SDCard)
					}
				}},
			{name: "qrCode keeps the scanned code in metadata", in: EventInput{Type: EventQRCode, QRCode: "DRIVER-42"}, webhook: true,
				checkSelf: func(t *testing.T, e *Event) {
					if e.Metadata != "DRIVER-42" {
						t.Fatalf("metadata %q", e.Metadata)
					}
				}},
			{name: "samples are serialized into metadata",
				in:      EventInput{Type: EventGsensorHigh, Samples: []MetadataSample{{X: 1.5, Y: -0.25, Z: 9.81, Time: 1772366400, Speed: 22.2}}},
				webhook: true,
				checkSelf: func(t *testing.T, e *Event) {
					var got []MetadataSample
					if err := json.Unmarshal([]byte(e.Metadata), &got); err != nil || len(got) != 1 || got[0].Z != 9.81 || got[0].Speed != 22.2 {
						t.Fatalf("metadata %q: %v", e.Metadata, err)
					}
					if e.Severity != SeverityHigh {
						t.Fatalf("severity %d, want the gsensorHigh default 1", e.Severity)
					}
				}},
			{name: "reported severity wins over the default", in: EventInput{Type: EventAccOn, Severity: SeverityHigh}, webhook: true,
				checkSelf: func(t *testing.T, e *Event) {
					if e.Severity != SeverityHigh || e.Status != EventStatusNew {
						t.Fatalf("severity %d status %q", e.Severity, e.Status)
					}
				}},
			{name: "privacy mode keeps in-cabin events off",
				settings: func(s *DeviceSettings) { s.PrivacyMode, s.PrivacyModeConfig = PrivacyModeOn, &PrivacyModeConfig{} },
				in:       EventInput{Type: EventCellPhoneUse, Speed: 60}, dropped: DropPrivacyMode},
			{name: "privacy mode keeps beeps off without cabin beep alerts",
				settings: func(s *DeviceSettings) {
					s.PrivacyMode, s.PrivacyModeConfig = PrivacyModeOn, &PrivacyModeConfig{CabinEvents: true}
				},
				in: EventInput{Type: EventSmokingBeep, Speed: 60}, dropped: DropPrivacyMode},
			{name: "privacy mode keeps the events it allows but not the lens video it blocks",
				settings: func(s *DeviceSettings) {
					s.PrivacyMode, s.PrivacyModeConfig = PrivacyModeOn, &PrivacyModeConfig{CabinEvents: true, RoadAndAuxLensVideo: true}
				},
				in: EventInput{Type: EventSmoking, Speed: 60, Files: twoFiles("106")}, files: 1, webhook: true,
				checkSelf: func(t *testing.T, e *Event) {
					if e.Files[0].CameraID != 1 {
						t.Fatalf("kept camera %d, want the road-facing one", e.Files[0].CameraID)
					}
				}},
			{name: "privacy mode does not govern power events",
				settings: func(s *DeviceSettings) { s.PrivacyMode, s.PrivacyModeConfig = PrivacyModeOn, &PrivacyModeConfig{} },
				in:       EventInput{Type: EventAccOff}, webhook: true},
			{name: "privacy mode off again governs nothing",
				settings: func(s *DeviceSettings) { s.PrivacyMode, s.PrivacyModeConfig = PrivacyModeOff, &PrivacyModeConfig{} },
				in:       EventInput{Type: EventAccident, Files: twoFiles("107")}, files: 2, webhook: true},
			{name: "an MV+AI event's own minimum speed below 5 km/h, and its beeps",
				settings: func(s *DeviceSettings) {
					three := 3
					s.Events.Events = map[string]EventSetting{EventCellPhoneUse: {Enabled: true, MinimumSpeedKmh: &three}}
				},
				in: EventInput{Type: EventCellPhoneUseBeep, Speed: 60}, dropped: DropMVAIMinSpeed},
			{name: "alias names store the API syntax", in: EventInput{Type: "sharpTurnRight"}, webhook: true,
				checkSelf: func(t *testing.T, e *Event) {
					if e.Type != EventSharpRightTurn {
						t.Fatalf("type %q", e.Type)
					}
				}},
		}
		for i, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				f := newEventFixture(t)
				if tc.settings != nil {
					f.settings(f.dev, tc.settings)
				}
				tc.in.DeviceEventID = fmt.Sprintf("ev-%d", i)
				tc.in.Time = eventT0
				// The recipients of its type are e-mailed exactly when the
				// webhooks are told of the event.
				f.recipients(tc.in.Type, "a@fleet.example", "b@fleet.example")
				res := f.ingest(f.dev, tc.in)
				if res.Dropped != tc.dropped {
					t.Fatalf("dropped %q, want %q", res.Dropped, tc.dropped)
				}
				mails := f.eventMail()
				if tc.dropped != "" {
					if res.Created || f.eventCount(f.dev) != 0 || len(f.messages(MessageEvent)) != 0 || len(mails) != 0 {
						t.Fatalf("a dropped event was stored, reported or e-mailed: %+v %+v", res, mails)
					}
					return
				}
				if want := map[bool]int{true: 2}[tc.webhook]; len(mails) != want {
					t.Fatalf("%d e-mails queued (%+v), want %d", len(mails), mails, want)
				}
				for _, m := range mails {
					if m.EventID != res.Event.ID || m.IMEI != f.dev.IMEI || !m.NextAttemptAt.Equal(m.QueuedAt) {
						t.Fatalf("queued e-mail %+v of event %d", m, res.Event.ID)
					}
				}
				if !res.Created || len(res.Event.Files) != tc.files {
					t.Fatalf("created %v with %d files, want %d", res.Created, len(res.Event.Files), tc.files)
				}
				msgs := f.messages(MessageEvent)
				if (len(msgs) == 1) != tc.webhook || len(msgs) > 1 {
					t.Fatalf("%d event messages, want webhook %v", len(msgs), tc.webhook)
				}
				if tc.webhook {
					d := msgs[0].Event
					if d == nil || d.ID != res.Event.ID || msgs[0].IMEI != f.dev.IMEI || !d.Time.Equal(eventT0) ||
						d.Type != res.Event.Type || len(d.Files) != tc.files {
						t.Fatalf("message %+v", msgs[0])
					}
				}
				if tc.checkSelf != nil {
					tc.checkSelf(t, res.Event)
				}
			})
		}
	})
}

func TestIngestEventRefusesBadInput(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		tests := []struct {
			name, want string
			in         EventInput
		}{
			{"unknown type", "not an event kind", EventInput{Type: "teleport"}},
			{"sdCardFormatted without uuid", "sdCard.uuid", EventInput{Type: EventSDCardFormatted}},
			{"qrCode without code", "qrCode", EventInput{Type: EventQRCode}},
			{"bad camera", "cameraId", EventInput{Type: EventButton, Files: []EventFile{{CameraID: 7, FileID: "1", FileType: FileVideo}}}},
			{"bad file id", "fileId", EventInput{Type: EventButton, Files: []EventFile{{CameraID: 1, FileID: "../x", FileType: FileVideo}}}},
			{"bad severity", "severity", EventInput{Type: EventButton, Severity: 4}},
			{"geofence without path", "geoFencePath", EventInput{Type: EventGeoFence, GeoFenceID: 1}},
			{"negative accuracy", "accuracy must not be negative", EventInput{Type: EventButton, Accuracy: -1}},
			{"sample at time 0", "samples[0].time", EventInput{Type: EventButton, Samples: []MetadataSample{{Time: 0}}}},
			{"sample in the year 10000", "samples[1].time", EventInput{Type: EventButton,
				Samples: []MetadataSample{{Time: eventT0.Unix()}, {Time: 253402300800}}}},
			{"sample with negative speed", "samples[0].speed must not be negative", EventInput{Type: EventButton,
				Samples: []MetadataSample{{Time: eventT0.Unix(), Speed: -1}}}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				f := newEventFixture(t)
				tc.in.Time = eventT0
				err := f.db.Update(t.Context(), Actor{}, func(tx *Tx) error { _, err := tx.IngestEvent(f.dev, tc.in); return err })
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err %v, want ErrInvalid naming %s", err, tc.want)
				}
			})
		}
	})
}

func TestIngestEventRedeliveryStoredOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		in := EventInput{DeviceEventID: "dev-7", Type: EventButton, Time: eventT0, Files: twoFiles("7")}
		first := f.ingest(f.dev, in)
		second := f.ingest(f.dev, in)
		if !first.Created || second.Created || second.Event == nil || second.Event.ID != first.Event.ID {
			t.Fatalf("first %+v second %+v", first, second)
		}
		// The same device id on another device is another event.
		if other := f.ingest(f.dev2, in); !other.Created {
			t.Fatal("same id on another device was taken for a redelivery")
		}
		if n := f.eventCount(f.dev); n != 1 {
			t.Fatalf("%d events stored", n)
		}
		if n := len(f.messages(MessageEvent)); n != 2 {
			t.Fatalf("%d event messages, want 2 (one per device)", n)
		}
		var m *MediaFile
		f.update(func(tx *Tx) error {
			var err error
			m, err = tx.MediaFile(MediaRef{IMEI: f.dev.IMEI, CameraID: 1, FileType: FileVideo, FileID: "7"})
			return err
		})
		if m.Refs != 1 {
			t.Fatalf("redelivery counted the file twice: refs %d", m.Refs)
		}
		// A redelivery of a deleted event does not bring it back.
		f.update(func(tx *Tx) error { _, err := tx.DeleteEvent(first.Event.ID); return err })
		if again := f.ingest(f.dev, in); again.Created || again.Event != nil {
			t.Fatalf("deleted event came back: %+v", again)
		}
	})
}

func TestReviewEvent(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		e := f.ingest(f.dev, EventInput{Type: EventButton, Time: eventT0}).Event
		resolved, sev := EventStatusResolved, SeverityLow
		var got *Event
		err := f.db.Update(t.Context(), Actor{UserID: 9, Email: "rev@example.com"}, func(tx *Tx) error {
			var err error
			got, err = tx.ReviewEvent(e.ID, EventReview{Status: &resolved, Severity: &sev, Comment: "seen", AudienceName: "partner"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != resolved || got.Severity != sev || len(got.Comments) != 1 {
			t.Fatalf("review %+v", got)
		}
		c := got.Comments[0]
		if c.ID == 0 || c.Comment != "seen" || c.CreatedByID != 9 || c.CreatedByEmail != "rev@example.com" || !c.CreatedAt.Equal(eventT0) {
			t.Fatalf("comment %+v", c)
		}
		bad := "open"
		err = f.db.Update(t.Context(), Actor{}, func(tx *Tx) error { _, err := tx.ReviewEvent(e.ID, EventReview{Status: &bad}); return err })
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("status open: %v", err)
		}
		entries, _, _ := f.db.AuditLog(t.Context(), AuditFilter{Action: "event.review"}, Page{})
		if len(entries) != 1 {
			t.Fatalf("%d audit entries", len(entries))
		}
	})
}
