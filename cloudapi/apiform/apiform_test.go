package apiform

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

func TestTime(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	for _, c := range []struct {
		in   time.Time
		want string
	}{
		{time.Time{}, ""},
		{time.Date(2026, 11, 30, 13, 4, 5, 678_900_000, cet), "2026-11-30T12:04:05.678Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05.000Z"},
	} {
		if got := Time(c.in); got != c.want {
			t.Errorf("Time(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A comment reads as the reference contract's alarm comment: its members,
// the platform's own audience under its shown name, the API's time form.
func TestNewAlarmComment(t *testing.T) {
	c := store.AlarmComment{ID: 7, AlarmID: 3, Details: "checked", CreatedByAudienceName: store.AudienceSystem,
		CreatedByID: 12, CommentorName: "Ana", CreatedAt: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	raw, err := json.Marshal(NewAlarmComment(c))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":7,"alarmId":3,"details":"checked","createdByAudienceName":"surfsight",` +
		`"createdById":12,"commentorName":"Ana","createdAt":"2026-11-30T09:00:00.000Z"}`
	if string(raw) != want {
		t.Errorf("comment = %s, want %s", raw, want)
	}
}
