package webhooks

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestLegacyRowsRenderAsRecorded replays every golden webhook as a message
// recorded before the store recorded typed facts: the row carries the data
// object, rendered, and no fact. Fan-out sends the body it always did.
func TestLegacyRowsRenderAsRecorded(t *testing.T) {
	w := newGoldenWorld(t)
	var seq int64
	for _, tc := range goldenCases() {
		w.clock.Advance(time.Minute)
		w.update(func(tx *store.Tx) error { return tc.run(w, tx) })
		var msgs []store.Message
		err := w.db.View(t.Context(), func(tx *store.Tx) error {
			var err error
			msgs, err = tx.MessagesAfter(seq, 0)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var want [][]byte
		var legacy []store.Message
		for i, m := range msgs {
			seq = m.Seq
			golden, err := os.ReadFile(filepath.Join("testdata", "golden", tc.golden[i]+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var env Envelope
			if err := json.Unmarshal(golden, &env); err != nil {
				t.Fatal(err)
			}
			want = append(want, golden)
			legacy = append(legacy, store.Message{Kind: m.Kind, SubType: m.SubType, OrganizationID: m.OrganizationID,
				PartnerID: m.PartnerID, IMEI: m.IMEI, Time: m.Time, Payload: env.Data})
		}
		w.update(func(tx *store.Tx) error {
			for _, m := range legacy {
				if err := tx.Emit(m); err != nil {
					return err
				}
			}
			return nil
		})
		var bodies [][]byte
		bodies, seq = w.bodies(seq)
		if len(bodies) != len(want) {
			t.Fatalf("%s: %d legacy bodies, want %d", tc.name, len(bodies), len(want))
		}
		for i := range bodies {
			if !bytes.Equal(append(bodies[i], '\n'), want[i]) {
				t.Errorf("%s: legacy row renders\n%s\nwant\n%s", tc.golden[i], bodies[i], want[i])
			}
		}
	}
}

// TestBodiesAreSnapshotsOfTheirMoment changes the records a webhook tells
// about after its message was recorded, before fan-out: the body tells
// them as they were.
func TestBodiesAreSnapshotsOfTheirMoment(t *testing.T) {
	w := newGoldenWorld(t)
	_, seq := w.bodies(0)
	var alarmID int64
	w.update(func(tx *store.Tx) error {
		if _, err := ingest(w, tx, store.EventInput{DeviceEventID: "snap", Type: "button", Time: w.clock.Now(), DriverID: w.driver.ID}); err != nil {
			return err
		}
		a, _, err := tx.RaiseAlarm(w.dev, store.AlarmSDCardMissing, w.clock.Now(), "no card")
		alarmID = a.ID
		return err
	})
	w.clock.Advance(time.Hour)
	w.update(func(tx *store.Tx) error {
		renamed := "Renamed"
		if _, err := tx.UpdateDriver(w.driver.ID, store.DriverPatch{FirstName: &renamed}); err != nil {
			return err
		}
		_, err := tx.CommentOnAlarm(alarmID, "added later")
		return err
	})
	bodies, _ := w.bodies(seq)
	if len(bodies) != 2 {
		t.Fatalf("%d bodies, want the event's and the alarm's", len(bodies))
	}
	if ev := string(bodies[0]); !strings.Contains(ev, `"firstName":"Dana"`) || strings.Contains(ev, "Renamed") {
		t.Errorf("event body %s does not name the driver as at the event", ev)
	}
	if al := string(bodies[1]); !strings.Contains(al, `"comments":[]`) && !strings.Contains(al, `"comments":null`) || strings.Contains(al, "added later") {
		t.Errorf("alarm body %s carries a comment made after the alarm", al)
	}
}

// TestWebhookTimesInAPIForm: every time of a webhook body that is not
// Unix seconds is written as the API writes it, YYYY-MM-DDThh:mm:ss.sssZ in
// UTC, also when the stored time has nanoseconds or another zone; and a
// comment of the platform's own has the API's audience name, surfsight.
func TestWebhookTimesInAPIForm(t *testing.T) {
	created := time.Date(2026, 11, 30, 13, 42, 48, 963052445, time.FixedZone("IST", 2*3600))
	closed := time.Date(2026, 11, 30, 11, 42, 58, 779013560, time.UTC)
	alarm := store.AlarmFact{Alarm: store.Alarm{ID: 1, IMEI: "356000000000018", AlarmDefinitionID: 1002,
		CreatedAt: created, LastCloseAt: closed, Comments: []store.AlarmComment{{ID: 2, AlarmID: 1, CreatedAt: created,
			CreatedByAudienceName: store.AudienceSystem}}}}
	cams := store.AuxSearchFact{Cameras: []store.AuxCamera{{CameraID: 53, Paired: true, PairedAt: created, ChangedAt: closed}}}
	tests := []struct {
		name string
		msg  store.Message
		want []string
	}{
		{"alarm", store.Message{Kind: store.MessageAlarm, SubType: "closed", Alarm: &alarm},
			[]string{`"createdAt":"2026-11-30T11:42:48.963Z"`, `"lastCloseAt":"2026-11-30T11:42:58.779Z"`, `"comments":[{"id":2,"alarmId":1,"details":"","createdByAudienceName":"surfsight","createdById":0,"commentorName":"","createdAt":"2026-11-30T11:42:48.963Z"}]`}},
		{"open alarm", store.Message{Kind: store.MessageAlarm, SubType: "created", Alarm: &store.AlarmFact{Alarm: store.Alarm{CreatedAt: created}}},
			[]string{`"createdAt":"2026-11-30T11:42:48.963Z"`}},
		{"auxiliary camera search", store.Message{Kind: store.MessageSystem, SubType: "auxiliaryCamerasPairingStatus", AuxSearch: &cams},
			[]string{`"pairedAt":"2026-11-30T11:42:48.963Z","changedAt":"2026-11-30T11:42:58.779Z"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := renderData(&tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !bytes.Contains(raw, []byte(w)) {
					t.Errorf("body %s lacks %s", raw, w)
				}
			}
			if bytes.Contains(raw, []byte("lastCloseAt")) != (tc.name == "alarm") {
				t.Errorf("body %s: lastCloseAt only when the alarm was closed", raw)
			}
		})
	}
}
