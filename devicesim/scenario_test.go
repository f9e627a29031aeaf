package devicesim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseScenario(t *testing.T) {
	yamlDoc := `
- at: 90s
  type: deceleration
  severity: 1
- at: 5
  action: checkIn
  pinCode: "12345"
- {at: 1m, action: offline, duration: 30s}
`
	sc, err := ParseScenario(strings.NewReader(yamlDoc))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Steps) != 3 || sc.Loop {
		t.Fatalf("%+v", sc)
	}
	if sc.Steps[0].Action != ActionCheckIn || time.Duration(sc.Steps[0].At) != 5*time.Second ||
		time.Duration(sc.Steps[1].Duration) != 30*time.Second || sc.Steps[2].Type != "deceleration" {
		t.Fatalf("steps not in time order or misread: %+v", sc.Steps)
	}
	jsonDoc := `{"loop": true, "steps": [{"at": "2s", "type": "driverCheckIn", "qrCode": "q-1"}, {"at": 3.5, "action": "reboot"}]}`
	sc, err = ParseScenario(strings.NewReader(jsonDoc))
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Loop || len(sc.Steps) != 2 || time.Duration(sc.Steps[1].At) != 3500*time.Millisecond {
		t.Fatalf("%+v", sc)
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"empty", "", "no steps"},
		{"unknown type", `[{at: 1s, type: de_acceleration}]`, `step 1: type "de_acceleration"`},
		{"both", `[{at: 1s, type: button, action: reboot}]`, "step 1: needs exactly one"},
		{"neither", `[{at: 1s}]`, "needs exactly one"},
		{"bad at", `[{at: soon, type: button}]`, "must be a duration"},
		{"negative at", `[{at: -1s, type: button}]`, "at must not be negative"},
		{"offline without duration", `[{at: 1s, type: button}, {at: 2s, action: offline}]`, "step 2: offline needs a positive duration"},
		{"check-in pin", `[{at: 1s, action: checkIn, pinCode: "12"}]`, `pinCode "12" must be 5 digits`},
		{"unknown action", `[{at: 1s, action: explode}]`, `action "explode"`},
		{"severity", `[{at: 1s, type: button, severity: 4}]`, "severity 4"},
		{"geofence path", `[{at: 1s, type: geoFence, geoFencePath: around}]`, "geoFencePath"},
		{"unknown fault", `[{at: 1s, action: health, faults: [sdCardFailing, flatTyre]}]`, `faults: fault "flatTyre" must be one of`},
		{"faults elsewhere", `[{at: 1s, action: reboot, faults: [sdCardFailing]}]`, "faults belong to a health action"},
		{"aux camera id", `[{at: 1s, action: auxDisconnect, cameraId: 2}]`, "auxDisconnect needs the cameraId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScenario(strings.NewReader(tc.doc))
			if !errors.Is(err, ErrInvalidScenario) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrInvalidScenario mentioning %q", err, tc.want)
			}
		})
	}
}

func TestPlaySteps(t *testing.T) {
	d := offlineDevice(t, Options{})
	ctx := context.Background()
	steps := []Step{
		{Action: ActionCheckIn, PinCode: "12345"},
		{Type: "geoFence", GeoFenceID: 3, GeoFencePath: "entered"},
		{Action: ActionFormatStorage},
		{Action: ActionCheckOut},
		{Action: ActionOffline, Duration: Offset(time.Minute)},
	}
	before := d.SDCard().UUID
	for _, s := range steps {
		if err := d.Play(ctx, s); err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
	}
	var types []string
	for _, ev := range queuedEvents(t, d) {
		types = append(types, ev.Type)
		if ev.Type == "geoFence" && (ev.GeoFenceID != 3 || ev.GeoFencePath != "entered") {
			t.Fatalf("geofence event %+v", ev)
		}
		if ev.Type == "sdCardFormatted" && (ev.SDCard == nil || ev.SDCard.UUID == before) {
			t.Fatalf("format event %+v", ev)
		}
	}
	if got := strings.Join(types, ","); got != "driverCheckIn,geoFence,sdCardFormatted,driverCheckOut" {
		t.Fatalf("events %s", got)
	}
	if d.offlineWait() < 59*time.Second {
		t.Fatalf("offline for %s, want a minute", d.offlineWait())
	}
}

func TestExampleFilesParse(t *testing.T) {
	sc, err := LoadScenario("testdata/scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Steps) != 10 || sc.Steps[5].Action != ActionOffline {
		t.Fatalf("%+v", sc.Steps)
	}
	r, err := LoadGPX("testdata/river.gpx", 0)
	if err != nil {
		t.Fatal(err)
	}
	// 240 s out, 240 s back, with the 30 s stop both ways.
	if r.Duration() != 480*time.Second {
		t.Fatalf("duration %s", r.Duration())
	}
	if p := r.At(145 * time.Second); p.Speed != 0 {
		t.Fatalf("moving during the stop: %+v", p)
	}
}
