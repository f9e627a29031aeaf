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
	// PartnerOnly keeps the entry from the actor's organization when
	// OrganizationID is 0: only the partner reads it.
	PartnerOnly bool
	Reason      string
	Before      any
	After       any
}

// Audit appends an entry for change, attributed to the transaction's actor.
func (tx *Tx) Audit(c AuditChange) error {
	e := AuditEntry{
		Time: tx.now, UserID: tx.actor.UserID, UserEmail: tx.actor.Email,
		PartnerID: c.PartnerID, OrganizationID: c.OrganizationID, Source: tx.actor.Source,
		Action: c.Action, EntityType: c.EntityType, EntityID: c.EntityID, Reason: c.Reason,
		RequestID: tx.actor.RequestID,
	}
	if e.PartnerID == 0 {
		e.PartnerID = tx.actor.PartnerID
	}
	if e.OrganizationID == 0 && !c.PartnerOnly {
		e.OrganizationID = tx.actor.OrganizationID
	}
	var err error
	if e.Before, err = rawJSON(c.Before); err != nil {
		return err
	}
	if e.After, err = rawJSON(c.After); err != nil {
		return err
	}
	return tx.rec.AuditEntries().Append(&e)
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

// Match reports whether f selects e.
func (f AuditFilter) Match(e *AuditEntry) bool {
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
		var err error
		out, total, err = tx.rec.AuditEntries().List(ctx, f, p)
		if err != nil && ctx.Err() != nil {
			return abandoned(ctx)
		}
		return err
	})
	return out, total, err
}

// purgeAudit deletes the audit entries of organizations whose cutoff they
// precede, oldest first.
func purgeAudit(tx *Tx, cut Cutoffs, from []byte, limit int) (int, []byte, error) {
	return tx.rec.AuditEntries().Purge(cut, from, limit)
}
