package devicesim

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

func TestHealthInStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults []string
		check  func(protocol.Status) bool
	}{
		{"healthy", nil, func(s protocol.Status) bool {
			c2, _ := camera(s, 2)
			return s.SDCard.Present && s.SDCard.Healthy && s.SDCard.UUID != "" && s.RecordingTest == "passed" &&
				*s.PowerConnected && c2.Connected
		}},
		{"sd card missing", []string{FaultSDCardMissing}, func(s protocol.Status) bool {
			return !s.SDCard.Present && s.SDCard.UUID == ""
		}},
		{"sd card failing", []string{FaultSDCardFailing}, func(s protocol.Status) bool {
			return s.SDCard.Present && !s.SDCard.Healthy && s.SDCard.UUID != ""
		}},
		{"recording test", []string{FaultRecordingTestFailed}, func(s protocol.Status) bool { return s.RecordingTest == "failed" }},
		{"camera", []string{FaultCameraDisconnected}, func(s protocol.Status) bool {
			c1, _ := camera(s, 1)
			c2, _ := camera(s, 2)
			return c1.Connected && !c2.Connected
		}},
		{"power", []string{FaultPowerDisconnected}, func(s protocol.Status) bool { return !*s.PowerConnected }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ParseHealth(tc.faults)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Faults(); !slices.Equal(got, tc.faults) {
				t.Fatalf("faults %v, want %v", got, tc.faults)
			}
			d := offlineDevice(t, Options{Health: h})
			if st := d.Status(); !tc.check(st) {
				t.Fatalf("status %+v (sd %+v)", st, st.SDCard)
			}
			if tc.faults == nil {
				return
			}
			// Healthy again.
			if err := d.SetHealth(t.Context(), Health{}); err != nil {
				t.Fatal(err)
			}
			st := d.Status()
			if c2, _ := camera(st, 2); !st.SDCard.Present || !st.SDCard.Healthy || st.RecordingTest != "passed" || !*st.PowerConnected || !c2.Connected {
				t.Fatalf("status after SetHealth(healthy) %+v", st)
			}
		})
	}
	if _, err := ParseHealth([]string{"sdCardFailing", "flatTyre"}); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), `"flatTyre"`) {
		t.Fatalf("unknown fault: %v", err)
	}
}

func TestHealthPublishedAndFormatWithoutCard(t *testing.T) {
	cloud := newFakeCloud(t)
	imei := mustIMEI(t, 13)
	d := startDevice(t, testOptions(cloud, imei))
	cloud.msg(t, imei, protocol.TopicStatus, nil)

	if err := d.Play(t.Context(), Step{Action: ActionHealth, Faults: []string{FaultSDCardMissing, FaultPowerDisconnected}}); err != nil {
		t.Fatal(err)
	}
	statusWith(t, cloud, imei, func(s protocol.Status) bool {
		return s.SDCard != nil && !s.SDCard.Present && s.PowerConnected != nil && !*s.PowerConnected
	})
	r, _ := cloud.command(t, imei, true, protocol.CmdFormatStorage, nil)
	if r.OK || !strings.Contains(r.Error, "no SD card") {
		t.Fatalf("format without a card answered %+v", r)
	}
	if err := d.Play(t.Context(), Step{Action: ActionFormatStorage}); !errors.Is(err, ErrNoSDCard) {
		t.Fatalf("formatStorage action without a card: %v", err)
	}
	if err := d.Play(t.Context(), Step{Action: ActionHealth}); err != nil {
		t.Fatal(err)
	}
	statusWith(t, cloud, imei, func(s protocol.Status) bool {
		return s.SDCard != nil && s.SDCard.Present && s.SDCard.Healthy && s.PowerConnected != nil && *s.PowerConnected
	})
	if h := d.Health(); h != (Health{}) {
		t.Fatalf("health %+v after the healthy step", h)
	}
}

func TestFaultScenarioParses(t *testing.T) {
	sc, err := LoadScenario("testdata/faults.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Steps) != 6 || !slices.Equal(sc.Steps[1].Faults, []string{FaultSDCardFailing, FaultPowerDisconnected}) ||
		sc.Steps[3].Action != ActionAuxDisconnect || sc.Steps[3].CameraID != 50 || sc.Steps[5].Faults != nil {
		t.Fatalf("%+v", sc.Steps)
	}
}
