// Package apiform holds the forms in which the HTTP API and its webhooks
// write the same things, so that a partner reads a time or an alarm
// comment alike in an answer and in a webhook body.
package apiform

import (
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// Time writes t as the API writes times, ISO 8601 in UTC with milliseconds
// (YYYY-MM-DDThh:mm:ss.sssZ); the zero time is "".
func Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// AlarmComment is a comment on an alarm.
type AlarmComment struct {
	ID                    int64  `json:"id"`
	AlarmID               int64  `json:"alarmId"`
	Details               string `json:"details"`
	CreatedByAudienceName string `json:"createdByAudienceName"`
	CreatedByID           int64  `json:"createdById"`
	CommentorName         string `json:"commentorName"`
	CreatedAt             string `json:"createdAt"`
}

// NewAlarmComment is c as the API and the alarm webhooks show it: the
// audience under its shown name, the time in the API's form.
func NewAlarmComment(c store.AlarmComment) AlarmComment {
	return AlarmComment{ID: c.ID, AlarmID: c.AlarmID, Details: c.Details,
		CreatedByAudienceName: store.AudienceShown(c.CreatedByAudienceName), CreatedByID: c.CreatedByID,
		CommentorName: c.CommentorName, CreatedAt: Time(c.CreatedAt)}
}
