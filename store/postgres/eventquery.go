package postgres

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// The event pages of a device and of an organization: a window of one
// index (events_device, events_organization) that the filters narrow,
// counted and paged in one statement.

// eventFilter is the WHERE clause of an event page and its arguments.
type eventFilter struct {
	conds []string
	args  pgx.NamedArgs
}

func newEventFilter() *eventFilter { return &eventFilter{args: pgx.NamedArgs{}} }

// add adds cond, which names the argument name, set to v.
func (f *eventFilter) add(cond, name string, v any) {
	f.conds = append(f.conds, cond)
	f.args[name] = v
}

// window bounds the event time by start and end, both inclusive; a zero
// time does not bound it.
func (f *eventFilter) window(start, end time.Time) {
	if !start.IsZero() {
		f.add(`time >= @start`, "start", start)
	}
	if !end.IsZero() {
		f.add(`time <= @end`, "end", end)
	}
}

// types keeps the events of these types when types is not nil (none when
// it is empty).
func (f *eventFilter) types(types map[string]bool) {
	if types != nil {
		f.add(`type = ANY (@types)`, "types", slices.Sorted(maps.Keys(types)))
	}
}

func (f *eventFilter) where() string { return strings.Join(f.conds, " AND ") }

// ByDevice implements store.EventSet over events_device. A holder keeps
// the events of Device.HoldsEvent: those of its ownership, and when that
// is 0 (both from before ownership numbers) those of its organization
// recorded since the device was created. (An event's organization is
// never 0 here, so the rule's "the event does not say" case is absent.)
func (s events) ByDevice(imei string, f store.DeviceEventFilter, p store.Page) ([]store.Event, int, error) {
	w := newEventFilter()
	w.add(`imei = @imei`, "imei", imei)
	w.window(f.Start, f.End)
	w.types(f.Types)
	if f.Status != "" {
		w.add(`status = @status`, "status", f.Status)
	}
	if h := f.Holder; h != nil {
		if h.IMEI != imei {
			return nil, 0, nil
		}
		w.add(`ownership = @ownership`, "ownership", h.Ownership)
		if h.Ownership == 0 {
			w.add(`organization_id = @holder_org`, "holder_org", h.OrganizationID)
			w.add(`created_at >= @holder_since`, "holder_since", h.CreatedAt)
		}
	}
	return s.page(w, p)
}

// ByOrganization implements store.EventSet over events_organization: its
// entries carry the type, partner and device, so that only the status
// filter and the page read the rows.
func (s events) ByOrganization(org int64, f store.OrgEventFilter, p store.Page) ([]store.Event, int, error) {
	w := newEventFilter()
	w.add(`organization_id = @org`, "org", org)
	w.window(f.Start, f.End)
	w.types(f.Types)
	if f.PartnerID != 0 {
		w.add(`partner_id = @partner`, "partner", f.PartnerID)
	}
	if f.IMEIs != nil {
		w.add(`imei = ANY (@imeis)`, "imeis", slices.Sorted(maps.Keys(f.IMEIs)))
	}
	if f.Status != "" {
		w.add(`status = @status`, "status", f.Status)
	}
	return s.page(w, p)
}

// page returns the page p of the events w keeps, by time then id, and how
// many it keeps: the page's ids and the count come from the index, then
// only the page's rows are read. A page past the end returns no row to
// carry the count, which is then counted alone.
func (s events) page(w *eventFilter, p store.Page) ([]store.Event, int, error) {
	args := maps.Clone(w.args)
	args["offset"] = max(p.Offset, 0)
	args["limit"] = nil // LIMIT NULL: all
	if p.Limit > 0 {
		args["limit"] = p.Limit
	}
	rows, err := s.t.pg.Query(s.t.ctx, `WITH page AS (
		SELECT id, time, count(*) OVER () AS total FROM events WHERE `+w.where()+`
		 ORDER BY time, id LIMIT @limit OFFSET @offset)
	SELECT `+eventColumns+`, page.total
	  FROM page JOIN events e ON e.id = page.id AND e.time = page.time
	 ORDER BY page.time, page.id`, args)
	if err != nil {
		return nil, 0, classify(err)
	}
	defer rows.Close()
	var out []store.Event
	total := 0
	for rows.Next() {
		e, err := scanEvent(rows, &total)
		if err != nil {
			return nil, 0, classify(err)
		}
		out = append(out, *e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, classify(err)
	}
	if len(out) == 0 && p.Offset > 0 {
		err := s.t.pg.QueryRow(s.t.ctx, `SELECT count(*) FROM events WHERE `+w.where(), w.args).Scan(&total)
		if err != nil {
			return nil, 0, classify(err)
		}
	}
	return out, total, nil
}

// ByOrganizationBefore implements store.EventSet over events_organization.
func (s events) ByOrganizationBefore(org int64, before time.Time, limit int) ([]store.Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	return s.list(`SELECT `+eventColumns+` FROM events e
		WHERE e.organization_id = $1 AND e.time < $2 ORDER BY e.time, e.id LIMIT $3`, org, before, limit)
}

// list returns the events a query of eventColumns selects.
func (s events) list(sql string, args ...any) ([]store.Event, error) {
	rows, err := s.t.pg.Query(s.t.ctx, sql, args...)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, classify(err)
		}
		out = append(out, *e)
	}
	return out, classify(rows.Err())
}
