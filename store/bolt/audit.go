package bolt

import (
	"bytes"
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
	b := a.t.bucket(bucketAudit)
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	e.ID = int64(seq)
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
	b := a.t.bucket(bucketAudit)
	c := b.Cursor()
	k, v := c.First()
	if from != nil {
		k, v = c.Seek(from)
	}
	var doomed [][]byte
	for ; k != nil; k, v = c.Next() {
		if limit > 0 && len(doomed) >= limit {
			return deleteKeys(b, doomed, k)
		}
		var e struct {
			OrganizationID int64     `json:"organizationId"`
			Time           time.Time `json:"time"`
		}
		if err := json.Unmarshal(v, &e); err != nil {
			return 0, nil, fmt.Errorf("store: decode: %w", err)
		}
		if !e.Time.Before(latest) {
			break
		}
		if t, ok := cut[e.OrganizationID]; ok && e.Time.Before(t) {
			doomed = append(doomed, bytes.Clone(k))
		}
	}
	return deleteKeys(b, doomed, nil)
}
