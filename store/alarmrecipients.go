package store

import (
	"net/mail"
	"slices"
	"strconv"
	"time"
)

// Alarm e-mail recipients. A recipient belongs to one organization, or to a
// partner as a whole (OrganizationID 0: every alarm of the partner's
// devices). The mailer sends each recipient one message per report interval
// listing the alarms raised since its cursor, LastAlarmID, which only moves
// after a message went out: no alarm is lost across a restart.

// Recipient kinds.
const (
	RecipientAlarms = "alarms" // /recipients/alarms: optionally limited to some alarm definitions
	RecipientHealth = "health" // /recipients/health: every device-health alarm
)

// MaxReportIntervalSeconds bounds a recipient's report interval (one week).
const MaxReportIntervalSeconds = 7 * 24 * 3600

// AlarmRecipient is an e-mail address that receives alarm reports.
type AlarmRecipient struct {
	ID                    int64   `json:"id"`
	Kind                  string  `json:"kind"`
	Email                 string  `json:"email"`
	ReportIntervalSeconds int     `json:"reportIntervalSeconds"`
	PartnerID             int64   `json:"partnerId"`
	OrganizationID        int64   `json:"organizationId,omitempty"`
	AlarmDefinitions      []int64 `json:"alarmDefinitions,omitempty"`
	CreatedByAudienceName string  `json:"createdByAudienceName"`
	CreatedByID           int64   `json:"createdById"`
	// LastAlarmID is the newest alarm already reported (or existing when the recipient was added).
	LastAlarmID  int64     `json:"lastAlarmId"`
	LastReportAt time.Time `json:"lastReportAt,omitzero"`
	CreatedAt    time.Time `json:"createdAt"`
}

func (r *AlarmRecipient) validate() error {
	addr, err := mail.ParseAddress(r.Email)
	switch {
	case r.Kind != RecipientAlarms && r.Kind != RecipientHealth:
		return Invalid("", "recipient kind %q", r.Kind)
	case err != nil || addr.Address != r.Email:
		return Invalid("email", "must be one e-mail address such as name@example.com")
	case r.ReportIntervalSeconds < 0 || r.ReportIntervalSeconds > MaxReportIntervalSeconds:
		return Invalid("reportIntervalSeconds", "must be from 0 to %d", MaxReportIntervalSeconds)
	}
	for _, d := range r.AlarmDefinitions {
		if _, ok := AlarmDefinitionByID(d); !ok {
			return Invalid("", "alarmDefinitions: %d is not a known alarm definition", d)
		}
	}
	return nil
}

// AddAlarmRecipient stores r; its cursor starts at the newest alarm, so it
// receives alarms raised from now on.
func (tx *Tx) AddAlarmRecipient(r *AlarmRecipient) error {
	if err := r.validate(); err != nil {
		return err
	}
	existing, err := tx.AlarmRecipients(func(o *AlarmRecipient) bool {
		return o.Kind == r.Kind && o.Email == r.Email && o.PartnerID == r.PartnerID && o.OrganizationID == r.OrganizationID
	})
	if err != nil {
		return err
	}
	if len(existing) > 0 {
		return Conflict("%s is already a %s recipient (id %d)", r.Email, r.Kind, existing[0].ID)
	}
	last, err := tx.rec.Alarms().LastID()
	if err != nil {
		return err
	}
	r.CreatedAt, r.LastAlarmID = tx.now, last
	r.CreatedByAudienceName, r.CreatedByID = tx.audience()
	if err := tx.rec.AlarmRecipients().Insert(r); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "recipient.create", EntityType: "recipient", EntityID: strconv.FormatInt(r.ID, 10),
		OrganizationID: r.OrganizationID, PartnerID: r.PartnerID, After: r})
}

// AlarmRecipient returns the recipient with id.
func (tx *Tx) AlarmRecipient(id int64) (*AlarmRecipient, error) {
	r, err := tx.rec.AlarmRecipients().Get(id)
	if err != nil {
		return nil, missing(err, "recipient %d", id)
	}
	return r, nil
}

// UpdateAlarmRecipient stores the changed interval or definitions of r.
func (tx *Tx) UpdateAlarmRecipient(r *AlarmRecipient) error {
	prev, err := tx.AlarmRecipient(r.ID)
	if err != nil {
		return err
	}
	if err := r.validate(); err != nil {
		return err
	}
	if err := tx.rec.AlarmRecipients().Put(r); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "recipient.update", EntityType: "recipient", EntityID: strconv.FormatInt(r.ID, 10),
		OrganizationID: r.OrganizationID, PartnerID: r.PartnerID, Before: prev, After: r})
}

// DeleteAlarmRecipient removes recipient id.
func (tx *Tx) DeleteAlarmRecipient(id int64) error {
	r, err := tx.AlarmRecipient(id)
	if err != nil {
		return err
	}
	if err := tx.rec.AlarmRecipients().Delete(id); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "recipient.delete", EntityType: "recipient", EntityID: strconv.FormatInt(id, 10),
		OrganizationID: r.OrganizationID, PartnerID: r.PartnerID, Before: r})
}

// AlarmRecipients returns the recipients keep admits (nil: all), in id order.
func (tx *Tx) AlarmRecipients(keep func(*AlarmRecipient) bool) ([]AlarmRecipient, error) {
	all, err := tx.rec.AlarmRecipients().List()
	if err != nil || keep == nil {
		return all, err
	}
	var out []AlarmRecipient
	for i := range all {
		if keep(&all[i]) {
			out = append(out, all[i])
		}
	}
	return out, nil
}

// Wants reports whether alarm a belongs in r's reports.
func (r *AlarmRecipient) Wants(a *Alarm) bool {
	if r.OrganizationID != 0 && a.OrganizationID != r.OrganizationID {
		return false
	}
	if r.OrganizationID == 0 && a.PartnerID != r.PartnerID {
		return false
	}
	return r.Kind == RecipientHealth || len(r.AlarmDefinitions) == 0 || slices.Contains(r.AlarmDefinitions, a.AlarmDefinitionID)
}

// Due reports whether r's report interval has passed at now.
func (r *AlarmRecipient) Due(now time.Time) bool {
	return r.LastReportAt.IsZero() || !now.Before(r.LastReportAt.Add(time.Duration(r.ReportIntervalSeconds)*time.Second))
}

// MarkAlarmRecipientReported moves recipient id's cursor to lastAlarmID
// after a report was sent at at. It is not audited: it is delivery
// bookkeeping, not a change anyone made.
func (tx *Tx) MarkAlarmRecipientReported(id, lastAlarmID int64, at time.Time) error {
	r, err := tx.AlarmRecipient(id)
	if err != nil {
		return err
	}
	r.LastAlarmID = max(r.LastAlarmID, lastAlarmID)
	r.LastReportAt = at
	return tx.rec.AlarmRecipients().Put(r)
}
