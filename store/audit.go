package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// AuditEntry records one write: who did what to which entity, with the value
// before and after. It is written in the transaction that makes the change.
type AuditEntry struct {
	ID             int64           `json:"id"`
	Time           time.Time       `json:"time"`
	UserID         int64           `json:"userId,omitempty"`
	UserEmail      string          `json:"userEmail,omitempty"`
	PartnerID      int64           `json:"partnerId,omitempty"`
	OrganizationID int64           `json:"organizationId,omitempty"`
	Source         string          `json:"source,omitempty"`
	Action         string          `json:"action"`
	EntityType     string          `json:"entityType"`
	EntityID       string          `json:"entityId"`
	Reason         string          `json:"reason,omitempty"`
	Before         json.RawMessage `json:"before,omitempty"`
	After          json.RawMessage `json:"after,omitempty"`
	RequestID      string          `json:"requestId,omitempty"`
}

// AuditChange describes one write for the audit log.
type AuditChange struct {
	Action     string // e.g. "organization.create"
	EntityType string // e.g. "organization"
	EntityID   string
	// OrganizationID scopes the entry so organization users can read it.
	OrganizationID int64
	// PartnerID scopes the entry to the partner that owns the entity.
	PartnerID int64
	Reason    string
	Before    any
	After     any
}

// Audit appends an entry for change, attributed to the transaction's actor.
func (tx *Tx) Audit(c AuditChange) error {
	id, err := tx.nextID(bucketAudit)
	if err != nil {
		return err
	}
	e := AuditEntry{
		ID: id, Time: tx.now, UserID: tx.actor.UserID, UserEmail: tx.actor.Email,
		PartnerID: c.PartnerID, OrganizationID: c.OrganizationID, Source: tx.actor.Source,
		Action: c.Action, EntityType: c.EntityType, EntityID: c.EntityID, Reason: c.Reason,
		RequestID: tx.actor.RequestID,
	}
	if e.PartnerID == 0 {
		e.PartnerID = tx.actor.PartnerID
	}
	if e.OrganizationID == 0 {
		e.OrganizationID = tx.actor.OrganizationID
	}
	if e.Before, err = rawJSON(c.Before); err != nil {
		return err
	}
	if e.After, err = rawJSON(c.After); err != nil {
		return err
	}
	return putJSON(tx.bucket(bucketAudit), itob(id), e)
}

func rawJSON(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("store: encode audit value: %w", err)
	}
	if bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	return raw, nil
}

// AuditFilter selects audit entries. Zero fields do not filter.
type AuditFilter struct {
	PartnerID      int64
	OrganizationID int64
	// OrganizationIDs, when not nil, admits only entries of these organizations
	// (plus the partner's own entries when PartnerID is set).
	EntityType string
	EntityID   string
	Action     string
	UserID     int64
	Start, End time.Time
}

func (f AuditFilter) match(e *AuditEntry) bool {
	switch {
	case f.PartnerID != 0 && e.PartnerID != f.PartnerID:
		return false
	case f.OrganizationID != 0 && e.OrganizationID != f.OrganizationID:
		return false
	case f.EntityType != "" && e.EntityType != f.EntityType:
		return false
	case f.EntityID != "" && e.EntityID != f.EntityID:
		return false
	case f.Action != "" && e.Action != f.Action:
		return false
	case f.UserID != 0 && e.UserID != f.UserID:
		return false
	case !f.Start.IsZero() && e.Time.Before(f.Start):
		return false
	case !f.End.IsZero() && e.Time.After(f.End):
		return false
	}
	return true
}

// AuditLog returns the entries matching f, newest first, and their total
// count; it stops with ctx's error when ctx ends during the scan.
func (db *DB) AuditLog(ctx context.Context, f AuditFilter, p Page) ([]AuditEntry, int, error) {
	var out []AuditEntry
	total := 0
	err := db.View(ctx, func(tx *Tx) error {
		c := tx.bucket(bucketAudit).Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			if err := abandoned(ctx); err != nil {
				return err
			}
			var e AuditEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("store: decode audit entry: %w", err)
			}
			if !f.match(&e) {
				continue
			}
			if total >= p.Offset && (p.Limit <= 0 || len(out) < p.Limit) {
				out = append(out, e)
			}
			total++
		}
		return nil
	})
	return out, total, err
}

// purgeAudit walks the audit log oldest first (ids grow with time) and
// deletes entries of organizations whose cutoff they precede.
func purgeAudit(tx *Tx, cut Cutoffs, from []byte, limit int) (int, []byte, error) {
	latest := cut.Latest()
	c := tx.bucket(bucketAudit).Cursor()
	k, v := c.First()
	if from != nil {
		k, v = c.Seek(from)
	}
	var doomed [][]byte
	for ; k != nil; k, v = c.Next() {
		if len(doomed) >= limit {
			return deleteKeys(tx.bucket(bucketAudit), doomed, k)
		}
		var e AuditEntry
		if err := jsonUnmarshal(v, &e); err != nil {
			return 0, nil, err
		}
		if !e.Time.Before(latest) {
			break
		}
		if t, ok := cut[e.OrganizationID]; ok && e.Time.Before(t) {
			doomed = append(doomed, bytes.Clone(k))
		}
	}
	return deleteKeys(tx.bucket(bucketAudit), doomed, nil)
}
