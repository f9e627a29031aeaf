package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// The audit log: bucket audit, id → AuditEntry. Ids come from the bucket's
// sequence, so keys only grow and the log is in the order it was written.

// AuditEntries implements store.WebhookRecords.
func (t *tx) AuditEntries() store.AuditEntryRecords { return auditEntries{t} }

type auditEntries struct{ t *tx }

// Append implements store.AuditEntryRecords.
func (a auditEntries) Append(e *store.AuditEntry) error {
	if err := a.t.drawID(bucketAudit, &e.ID); err != nil {
		return err
	}
	return a.put(e)
}

// put stores e under its id.
func (a auditEntries) put(e *store.AuditEntry) error {
	return putJSON(a.t.bucket(bucketAudit), itob(e.ID), e)
}

// List implements store.AuditEntryRecords: it walks the log from the newest
// entry back and decodes every one.
func (a auditEntries) List(ctx context.Context, f store.AuditFilter, p store.Page) ([]store.AuditEntry, int, error) {
	var out []store.AuditEntry
	total := 0
	c := a.t.bucket(bucketAudit).Cursor()
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		var e store.AuditEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, 0, fmt.Errorf("store: decode audit entry: %w", err)
		}
		if !f.Match(&e) {
			continue
		}
		if total >= p.Offset && (p.Limit <= 0 || len(out) < p.Limit) {
			out = append(out, e)
		}
		total++
	}
	return out, total, nil
}

// Purge implements store.AuditEntryRecords. Ids grow with time, so the walk
// stops at the first entry that is not older than the latest cutoff.
func (a auditEntries) Purge(cut store.Cutoffs, from []byte, limit int) (int, []byte, error) {
	latest := cut.Latest()
	return purgeFrom(a.t.bucket(bucketAudit), from, limit, func(_, v []byte) (bool, bool, error) {
		var e struct {
			OrganizationID int64     `json:"organizationId"`
			Time           time.Time `json:"time"`
		}
		if err := json.Unmarshal(v, &e); err != nil {
			return false, false, fmt.Errorf("store: decode: %w", err)
		}
		if !e.Time.Before(latest) {
			return false, false, nil
		}
		t, ok := cut[e.OrganizationID]
		return ok && e.Time.Before(t), true, nil
	})
}
