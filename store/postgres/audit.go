package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// The audit log: table audit_log, partitioned by the month of each entry,
// its id an identity. Every write of the store appends one entry, so
// Append is one INSERT.

// AuditEntries implements store.WebhookRecords.
func (t *tx) AuditEntries() store.AuditEntryRecords { return auditEntries{t} }

type auditEntries struct{ t *tx }

const auditColumns = `id, logged_at, user_id, user_email, partner_id, organization_id, source, action,
	entity_type, entity_id, reason, before, after, request_id`

// Append implements store.AuditEntryRecords.
func (a auditEntries) Append(e *store.AuditEntry) error {
	const insert = `INSERT INTO audit_log (` + auditRowColumns + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`
	if p := groupPipe(a.t); p != nil {
		// The id is drawn when the write goes, with the next statement,
		// and the entries of neighbouring jobs go in one (pipemerge.go).
		args := auditArgs(e)
		return p.queueMerged(&argsRow{of: auditKind, args: args}, insert, args...)
	}
	return classify(a.t.pg.QueryRow(a.t.ctx, insert+` RETURNING id`, auditArgs(e)...).Scan(&e.ID))
}

// auditRowColumns are auditColumns but the id, in auditArgs' order.
const auditRowColumns = `logged_at, user_id, user_email, partner_id, organization_id, source, action, entity_type,
	entity_id, reason, before, after, request_id`

// appendAuditSQL appends the entries of the arrays $1…, in their order.
const appendAuditSQL = `INSERT INTO audit_log (` + auditRowColumns + `)
	SELECT a.at, a.user_id, a.email, a.partner, a.org, a.source, a.action, a.entity_type, a.entity_id, a.reason,
		a.before, a.after, a.request_id
	  FROM unnest($1::timestamptz[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::text[],
		$8::text[], $9::text[], $10::text[], $11::json[], $12::json[], $13::text[])
		WITH ORDINALITY AS a (at, user_id, email, partner, org, source, action, entity_type, entity_id, reason,
			before, after, request_id, n)
	 ORDER BY a.n`

// auditKind merges the appends of audit entries (auditArgs).
var auditKind = &mergeKind{sql: appendAuditSQL, args: func(all []mergeable) []any {
	return []any{column[pgtype.Timestamptz](all, 0), column[pgtype.Int8](all, 1), column[string](all, 2),
		column[pgtype.Int8](all, 3), column[pgtype.Int8](all, 4), column[string](all, 5), column[string](all, 6),
		column[string](all, 7), column[string](all, 8), column[string](all, 9), jsonColumn(all, 10), jsonColumn(all, 11),
		column[string](all, 12)}
}}

// auditArgs are the values of auditRowColumns for e.
func auditArgs(e *store.AuditEntry) []any {
	return []any{timeBound(e.Time), nullID(e.UserID), e.UserEmail, nullID(e.PartnerID), nullID(e.OrganizationID),
		e.Source, e.Action, e.EntityType, e.EntityID, e.Reason, jsonbParam(e.Before), jsonbParam(e.After), e.RequestID}
}

// auditFields are the destinations of auditColumns in e.
func auditFields(e *store.AuditEntry) []any {
	return []any{&e.ID, zeroTime{&e.Time}, zeroID{&e.UserID}, &e.UserEmail, zeroID{&e.PartnerID},
		zeroID{&e.OrganizationID}, &e.Source, &e.Action, &e.EntityType, &e.EntityID, &e.Reason,
		&e.Before, &e.After, &e.RequestID}
}

// List implements store.AuditEntryRecords: the filter as WHERE clauses,
// newest first, under ctx.
func (a auditEntries) List(ctx context.Context, f store.AuditFilter, p store.Page) ([]store.AuditEntry, int, error) {
	var w where
	if f.PartnerID != 0 {
		w.and("partner_id = " + w.arg(f.PartnerID))
	}
	if f.OrganizationID != 0 {
		w.and("organization_id = " + w.arg(f.OrganizationID))
	}
	if f.EntityType != "" {
		w.and("entity_type = " + w.arg(f.EntityType))
	}
	if f.EntityID != "" {
		w.and("entity_id = " + w.arg(f.EntityID))
	}
	if f.Action != "" {
		w.and("action = " + w.arg(f.Action))
	}
	if f.UserID != 0 {
		w.and("user_id = " + w.arg(f.UserID))
	}
	if !f.Start.IsZero() {
		w.and("logged_at >= " + w.arg(timeBound(ceilMicro(f.Start))))
	}
	if !f.End.IsZero() {
		w.and("logged_at <= " + w.arg(timeBound(floorMicro(f.End))))
	}
	// The same transaction, its statements bound by the caller's ctx.
	under := &tx{ctx: ctx, pg: a.t.pg}
	return listPage(under, auditColumns, "audit_log", &w, "id DESC", p, auditFields)
}

// Purge implements store.AuditEntryRecords: in id order from the resume
// position, the entries older than their organization's cutoff, and none
// at or after the latest cutoff, which the partitions of the later months
// are not even looked at for.
func (a auditEntries) Purge(cut store.Cutoffs, from []byte, limit int) (int, []byte, error) {
	return purgeByCutoffs(a.t, `WITH doomed AS (
			SELECT a.id, a.logged_at FROM audit_log a
			JOIN unnest($1::bigint[], $2::timestamptz[]) AS c(organization_id, cutoff) USING (organization_id)
			WHERE a.id >= $3 AND a.logged_at < $4 AND a.logged_at < c.cutoff
			ORDER BY a.id LIMIT $5)
		DELETE FROM audit_log a USING doomed WHERE a.id = doomed.id AND a.logged_at = doomed.logged_at
		RETURNING a.id`, cut, from, limit)
}
