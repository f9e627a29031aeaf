package webhooks

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// update rewrites the golden webhook bodies from what the code renders now:
//
//	go test ./cloudapi/webhooks -run TestGoldenBodies -update
var update = flag.Bool("update", false, "rewrite testdata/golden/*.json from the rendered webhook bodies")

const goldenURL = "https://hooks.example.com/all"

// goldenWorld is a store with one organization whose one URL receives every
// webhook type, one device, a driver and a geofence, on a fixed clock.
type goldenWorld struct {
	t      *testing.T
	db     *store.DB
	clock  *storetest.Clock
	dev    *store.Device
	driver *store.Driver
}

func newGoldenWorld(t *testing.T) *goldenWorld {
	t.Helper()
	w := &goldenWorld{t: t, clock: storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
	w.db = storetest.Open(t, storetest.WithClock(w.clock.Now))
	w.update(func(tx *store.Tx) error {
		p, err := tx.CreatePartner("Partner")
		if err != nil {
			return err
		}
		o, err := tx.CreateOrganization(p.ID, "Fleet", []byte("salt"))
		if err != nil {
			return err
		}
		w.dev = &store.Device{IMEI: "356000000000018", Name: "Truck 17", OrganizationID: o.ID, PartnerID: p.ID}
		if err := tx.AddDevice(w.dev); err != nil {
			return err
		}
		w.driver = &store.Driver{OrganizationID: o.ID, ThirdPartyID: "EMP-7", FirstName: "Dana", LastName: "Levi"}
		if err := tx.CreateDriver(w.driver); err != nil {
			return err
		}
		if err := tx.SetGeofences(w.dev.IMEI, []store.Geofence{{ID: 3, Name: "Depot", Lat: 32.08, Lon: 34.78, Radius: 500}}); err != nil {
			return err
		}
		// Every catalogued event is on: speedLimit once a limit is set.
		ds, err := tx.DeviceSettings(w.dev.IMEI)
		if err != nil {
			return err
		}
		ev := store.DefaultEventConfig()
		ev.SpeedLimitKmh = 100
		ds.Events = &ev
		if err := tx.PutDeviceSettings(ds, "test.events"); err != nil {
			return err
		}
		all := store.SystemMessagesConfig{DeviceStatus: true, DeviceRemoved: true, AuxiliaryCamerasConnectionStatus: true,
			AuxiliaryCamerasPairingStatus: true, PrivacyMode: true}
		return tx.PutWebhookSettings(&store.WebhookSettings{OrganizationID: o.ID, GPSURLs: []string{goldenURL},
			EventURLs: []string{goldenURL}, AlarmURLs: []string{goldenURL}, ActivationURLs: []string{goldenURL},
			NotifyMediaAvailable: true, SubscribeForAlarmUpdates: true,
			SystemMessages: []store.SystemMessagesWebhook{{URL: goldenURL, Config: all}}})
	})
	return w
}

func (w *goldenWorld) update(fn func(tx *store.Tx) error) {
	w.t.Helper()
	if err := w.db.Update(w.t.Context(), store.Actor{Source: "test", UserID: 42}, fn); err != nil {
		w.t.Fatal(err)
	}
}

// bodies renders the bodies of the messages recorded after seq, in order,
// and returns them with the last sequence.
func (w *goldenWorld) bodies(seq int64) ([][]byte, int64) {
	w.t.Helper()
	var out [][]byte
	err := w.db.View(w.t.Context(), func(tx *store.Tx) error {
		msgs, err := tx.MessagesAfter(seq, 0)
		if err != nil {
			return err
		}
		for i := range msgs {
			seq = msgs[i].Seq
			targets, err := route(tx, &msgs[i])
			if err != nil {
				return err
			}
			if len(targets) != 1 || targets[0].url != goldenURL {
				w.t.Fatalf("message %d (%s/%s) goes to %v, want only %s", msgs[i].Seq, msgs[i].Kind, msgs[i].SubType, targets, goldenURL)
			}
			out = append(out, targets[0].body)
		}
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return out, seq
}

// goldenCase is something that happens, and the golden files of the
// webhook bodies it causes, in the order of its messages.
type goldenCase struct {
	name   string
	golden []string
	run    func(w *goldenWorld, tx *store.Tx) error
}

// ingest records an event of type typ for the world's device.
func ingest(w *goldenWorld, tx *store.Tx, in store.EventInput) (*store.Event, error) {
	res, err := tx.IngestEvent(w.dev, in)
	if err != nil {
		return nil, err
	}
	if !res.Created {
		w.t.Fatalf("event %s not recorded: dropped %q", in.Type, res.Dropped)
	}
	return res.Event, nil
}

// goldenEventInput is the fixed input of every catalogued event kind.
func goldenEventInput(w *goldenWorld, typ string) store.EventInput {
	in := store.EventInput{DeviceEventID: "ev-" + typ, Type: typ, Time: w.clock.Now().Add(-time.Minute),
		Lat: 32.0853, Lon: 34.7818, Alt: 21.5, Speed: 63.25, Accuracy: 4}
	switch typ {
	case store.EventGeoFence:
		in.GeoFenceID, in.GeoFencePath = 3, store.GeofenceExited
	case "sdCardFormatted":
		in.SDCard = &store.SDCardInfo{UUID: "7c1f-22aa", Manufacturer: "SanDisk"}
	case store.EventQRCode:
		in.QRCode = "qr-payload-1"
	}
	return in
}

// goldenCases lists one case per webhook kind and sub-type; every
// non-beep event kind of the catalogue is one.
func goldenCases() []goldenCase {
	var cases []goldenCase
	for _, k := range store.EventKinds() {
		if k.Beep {
			continue
		}
		cases = append(cases, goldenCase{name: "event " + k.API, golden: []string{"event." + k.API},
			run: func(w *goldenWorld, tx *store.Tx) error {
				_, err := ingest(w, tx, goldenEventInput(w, k.API))
				return err
			}})
	}
	return append(cases,
		goldenCase{name: "event with samples, driver and files, then its media", golden: []string{"event.withMedia", "mediaAvailable"},
			run: func(w *goldenWorld, tx *store.Tx) error {
				files := []store.EventFile{{CameraID: 1, FileID: "1772366400", FileType: "video"}, {CameraID: 2, FileID: "1772366400", FileType: "snapshot"}}
				in := store.EventInput{DeviceEventID: "ev-media", Type: "acceleration", Time: w.clock.Now(), Lat: 32.1, Lon: 34.8,
					Speed: 40, Severity: 3, DriverID: w.driver.ID, Files: files,
					Samples: []store.MetadataSample{{X: 1.5, Y: -0.25, Z: 9.81, Time: w.clock.Now().Unix(), Speed: 11.1}}}
				e, err := ingest(w, tx, in)
				if err != nil {
					return err
				}
				for i, f := range e.Files {
					ref := store.MediaRef{IMEI: w.dev.IMEI, CameraID: f.CameraID, FileType: f.FileType, FileID: f.FileID}
					if _, err := tx.CompleteUpload(store.MediaUpload{Ref: ref, Blob: "blob-" + strconv.Itoa(i), Size: 10, ContentType: "video/mp4"}); err != nil {
						return err
					}
				}
				return nil
			}},
		goldenCase{name: "alarm raised, commented, closed (its comment in the closing body)", golden: []string{"alarm.created", "alarm.closed"},
			run: func(w *goldenWorld, tx *store.Tx) error {
				a, _, err := tx.RaiseAlarm(w.dev, store.AlarmSDCardMissing, w.clock.Now(), "no card in slot 1")
				if err != nil {
					return err
				}
				if _, err := tx.CommentOnAlarm(a.ID, "driver asked to check"); err != nil {
					return err
				}
				_, err = tx.ActOnAlarm(a.ID, store.AlarmActionClose)
				return err
			}},
		goldenCase{name: "GPS", golden: []string{"gps"},
			run: func(w *goldenWorld, tx *store.Tx) error {
				t0 := w.clock.Now().Add(-30 * time.Second)
				points := []store.GPSPoint{{Time: t0, Lat: 32.1, Lon: 34.8, Alt: 10, Speed: 50.5, Accuracy: 3, Heading: 90},
					{Time: t0.Add(5*time.Second + 250*time.Millisecond), Lat: 32.1004, Lon: 34.8007, Alt: 11, Speed: 51, Accuracy: 3}}
				added, err := tx.AddGPS(w.dev, points)
				if err != nil {
					return err
				}
				return tx.Emit(store.Message{Kind: store.MessageGPS, OrganizationID: w.dev.OrganizationID,
					PartnerID: w.dev.PartnerID, IMEI: w.dev.IMEI, GPS: added})
			}},
		goldenCase{name: "device activation", golden: []string{"activation.deviceActivation"},
			run: func(w *goldenWorld, tx *store.Tx) error {
				dev := w.dev
				return tx.Emit(store.Message{Kind: store.MessageActivation, SubType: store.EventDeviceActivation, OrganizationID: dev.OrganizationID,
					PartnerID: dev.PartnerID, IMEI: dev.IMEI, Activation: &store.ActivationFact{EventID: 77}})
			}},
		goldenCase{name: "device status", golden: []string{"system.deviceStatus"},
			run: func(w *goldenWorld, tx *store.Tx) error {
				dev := w.dev
				return tx.Emit(store.Message{Kind: store.MessageSystem, SubType: store.SystemDeviceStatus,
					OrganizationID: dev.OrganizationID, PartnerID: dev.PartnerID, IMEI: dev.IMEI,
					Presence: &store.PresenceFact{Status: store.PresenceOffline, Previous: store.PresenceOnline}})
			}},
		goldenCase{name: "privacy mode", golden: []string{"system.privacyMode.mode", "system.privacyMode.applied", "system.privacyMode.config"},
			run: func(w *goldenWorld, tx *store.Tx) error {
				if _, err := tx.SetPrivacyMode(w.dev.IMEI, "on", true); err != nil {
					return err
				}
				if err := tx.PrivacyModeApplied(w.dev.IMEI, "off", "on"); err != nil {
					return err
				}
				return tx.SetPrivacyModeConfig(w.dev.IMEI, store.PrivacyModeConfig{GPSTracking: true, VoiceRecording: true}, false)
			}},
		goldenCase{name: "auxiliary cameras", golden: []string{"system.auxiliaryCamerasPairingStatus.paired",
			"system.auxiliaryCamera.connected", "activation.auxiliaryCamera.connected",
			"system.auxiliaryCamerasPairingStatus.searchCompleted", "system.auxiliaryCamerasPairingStatus.unpaired"},
			run: func(w *goldenWorld, tx *store.Tx) error {
				if err := tx.RecordAuxPairing(w.dev, []store.AuxCamera{{CameraID: 52, SerialNumber: "AUX-52", Kind: "wifi", SSID: "cam52"}}); err != nil {
					return err
				}
				reported := []store.CameraHealth{{ID: 52, SerialNumber: "AUX-52", Kind: "wifi", Connected: true}}
				if err := tx.ApplyAuxCameraStatus(w.dev, reported); err != nil {
					return err
				}
				if err := tx.RecordAuxSearch(w.dev, []store.AuxCamera{{CameraID: 53, SerialNumber: "AUX-53", Kind: "wifi", SSID: "cam53"}}); err != nil {
					return err
				}
				return tx.RecordAuxUnpairing(w.dev, []int{52})
			}},
		goldenCase{name: "device removed", golden: []string{"system.deviceRemoved"},
			run: func(w *goldenWorld, tx *store.Tx) error { return tx.RemoveDevice(w.dev.IMEI) }},
	)
}

// TestGoldenBodies renders the webhook body of every webhook kind and
// sub-type from fixed inputs and compares it byte for byte with its golden
// file in testdata/golden.
func TestGoldenBodies(t *testing.T) {
	w := newGoldenWorld(t)
	var seq int64
	w.db.View(w.t.Context(), func(tx *store.Tx) error {
		msgs, err := tx.MessagesAfter(0, 0)
		if len(msgs) > 0 {
			seq = msgs[len(msgs)-1].Seq
		}
		return err
	})
	seen := map[string]bool{}
	for _, tc := range goldenCases() {
		w.clock.Advance(time.Minute)
		w.update(func(tx *store.Tx) error { return tc.run(w, tx) })
		var bodies [][]byte
		bodies, seq = w.bodies(seq)
		if len(bodies) != len(tc.golden) {
			t.Fatalf("%s: %d webhook bodies, want %d (%v)", tc.name, len(bodies), len(tc.golden), tc.golden)
		}
		for i, body := range bodies {
			name := tc.golden[i]
			if seen[name] {
				t.Fatalf("golden file %s named twice", name)
			}
			seen[name] = true
			path := filepath.Join("testdata", "golden", name+".json")
			body = append(body, '\n')
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, body, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%s: %v (run with -update to write it)", tc.name, err)
			}
			if !bytes.Equal(body, want) {
				t.Errorf("%s: body differs from %s\n got: %s\nwant: %s", tc.name, path, body, want)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	for _, f := range files {
		if name := filepath.Base(f); !seen[name[:len(name)-len(".json")]] {
			t.Errorf("golden file %s belongs to no case", f)
		}
	}
}
