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
// index (events_device, events_organization) that the filters narrow.
//
// An organization's page whose filters the hourly counts answer (time,
// type, partner: no device set, no status) counts its window from the
// counts of the whole hours inside it and only the partial hours at its
// two ends from the index (eventcounts.go), and finds where its offset
// lands by skipping whole hours by their counts: the page is then read
// from the start of that hour with the offset that is left, which is less
// than one hour's events however deep the page, up to the end of the hour
// its last event is in. A device's page whose filters the daily counts
// answer (time, type, ownership: no status, no holder of ownership 0) is
// read the same way by days (spannedPage serves both): a device reports a
// few hundred events a day at most, and a day is one partition of the
// events. The other pages count their window from the index, in the round
// trip of the page itself.
//
// Every statement bounds the event time by parameters, in the form the
// planner prunes partitions with (time compared with a value, never an
// expression of the column): only the partitions of the bounds are read,
// whether the plan is made for the values or generic, and only those are
// planned when it is made for the values.

// eventFilter is the WHERE clause of an event page and its arguments: the
// conditions on what an event is (device, organization, type…) and its
// window.
type eventFilter struct {
	conds []string
	args  pgx.NamedArgs
	// start and end are the window's bounds (both inclusive, zero when
	// the window has none), as window set them.
	start, end time.Time
}

func newEventFilter() *eventFilter { return &eventFilter{args: pgx.NamedArgs{}} }

// add adds cond, which names the argument name, set to v.
func (f *eventFilter) add(cond, name string, v any) {
	f.conds = append(f.conds, cond)
	f.args[name] = v
}

// window bounds the event time by start and end, both inclusive; a zero
// time does not bound it. A stored time is a whole microsecond, and pgx
// drops a bound's fraction of one as it dropped the stored time's. The
// end goes to the statements as the microsecond after it (until), an
// exclusive bound: every upper bound of the time is then "<", so that a
// page's statement is one text whether its window's end or a unit's
// start bounds it, and a connection prepares and plans it once.
func (f *eventFilter) window(start, end time.Time) {
	f.start, f.end = floorMicro(start), floorMicro(end)
	if !start.IsZero() {
		f.args["start"] = f.start
	}
	if !end.IsZero() {
		f.args["until"] = f.end.Add(time.Microsecond)
	}
}

// types keeps the events of these types when types is not nil (none when
// it is empty).
func (f *eventFilter) types(types map[string]bool) {
	if types != nil {
		f.add(`type = ANY (@types)`, "types", slices.Sorted(maps.Keys(types)))
	}
}

// where is the clause of the events w keeps with a time from lo on and
// up to hi, each a condition on the column alone ("time >= @start"), which
// is what prunes the partitions; an empty one does not bound the time.
func (f *eventFilter) where(lo, hi string) string {
	conds := slices.Clone(f.conds)
	for _, c := range []string{lo, hi} {
		if c != "" {
			conds = append(conds, `time `+c)
		}
	}
	return strings.Join(conds, " AND ")
}

// bounds are the conditions of where for the window itself.
func (f *eventFilter) bounds() (lo, hi string) {
	if !f.start.IsZero() {
		lo = `>= @start`
	}
	if !f.end.IsZero() {
		hi = `< @until`
	}
	return lo, hi
}

// empty reports a window that ends before it starts.
func (f *eventFilter) empty() bool {
	return !f.start.IsZero() && !f.end.IsZero() && f.end.Before(f.start)
}

// ByDevice implements store.EventSet over events_device and the daily
// counts. A holder keeps the events of Device.HoldsEvent: those of its
// ownership, and when that is 0 (both from before ownership numbers)
// those of its organization recorded since the device was created. (An
// event's organization is never 0 here, so the rule's "the event does not
// say" case is absent.) The daily counts answer the time, type and
// ownership filters; the other pages (a status filter, a holder of
// ownership 0, whose organization and creation the counts do not keep, no
// limit or a window open at one end) count their window from the index.
func (s events) ByDevice(imei string, f store.DeviceEventFilter, p store.Page) ([]store.Event, int, error) {
	if h := f.Holder; h != nil && h.IMEI != imei {
		return nil, 0, nil
	}
	w, c := deviceEventFilter(imei, f)
	if c != nil && p.Limit > 0 {
		page, total, err := s.spannedPage(w, c, p, false)
		return plainEvents(page), total, err
	}
	page, total, err := s.countedPage(w, p, false)
	return plainEvents(page), total, err
}

// deviceEventFilter is the filter of ByDevice's events (the holder, if
// any, is imei), and the daily counts that answer it, nil where they do
// not.
func deviceEventFilter(imei string, f store.DeviceEventFilter) (*eventFilter, *unitCounts) {
	w := newEventFilter()
	w.add(`imei = @imei`, "imei", imei)
	w.window(f.Start, f.End)
	w.types(f.Types)
	c := newUnitCounts(24*time.Hour, "device_event_days", "day")
	c.add(`imei = @imei`, "imei", imei)
	if f.Types != nil {
		c.add(`type = ANY (@types)`, "types", w.args["types"])
	}
	if f.Status != "" {
		w.add(`status = @status`, "status", f.Status)
	}
	legacy := false
	if h := f.Holder; h != nil {
		w.add(`ownership = @ownership`, "ownership", h.Ownership)
		c.add(`ownership = @ownership`, "ownership", h.Ownership)
		if h.Ownership == 0 {
			w.add(`organization_id = @holder_org`, "holder_org", h.OrganizationID)
			w.add(`created_at >= @holder_since`, "holder_since", h.CreatedAt)
			legacy = true
		}
	}
	if f.Status != "" || legacy || f.Start.IsZero() || f.End.IsZero() {
		return w, nil
	}
	return w, c
}

// ByOrganization implements store.EventSet over events_organization and
// the hourly counts.
func (s events) ByOrganization(org int64, f store.OrgEventFilter, p store.Page) ([]store.Event, int, error) {
	page, total, err := s.byOrganization(org, f, p, false)
	return plainEvents(page), total, err
}

// ByOrganizationNamed implements store.OrgEventNamer: ByOrganization with
// the name each event's device has now, joined in the page's statement.
func (s events) ByOrganizationNamed(org int64, f store.OrgEventFilter, p store.Page) ([]store.OrgEvent, int, error) {
	return s.byOrganization(org, f, p, true)
}

var _ store.OrgEventNamer = events{}

// byOrganization is ByOrganization, with the devices' names when named.
// The index entries carry the type, partner and device, so that only the
// status filter and the page read the rows.
func (s events) byOrganization(org int64, f store.OrgEventFilter, p store.Page, named bool) ([]store.OrgEvent, int, error) {
	w, c := orgEventFilter(org, f)
	if c != nil && p.Limit > 0 {
		return s.spannedPage(w, c, p, named)
	}
	return s.countedPage(w, p, named)
}

// orgEventFilter is the filter of org's events under f, and the hourly
// counts that answer it, nil where they do not (a set of devices, a
// status, a window open at one end).
func orgEventFilter(org int64, f store.OrgEventFilter) (*eventFilter, *unitCounts) {
	w := newEventFilter()
	w.add(`organization_id = @org`, "org", org)
	w.window(f.Start, f.End)
	w.types(f.Types)
	if f.PartnerID != 0 {
		w.add(`partner_id = @partner`, "partner", f.PartnerID)
	}
	if f.IMEIs == nil && f.Status == "" && !f.Start.IsZero() && !f.End.IsZero() {
		c := newUnitCounts(time.Hour, "event_hours", "hour")
		c.add(`organization_id = @org`, "org", org)
		if f.PartnerID != 0 {
			c.add(`partner_id = @partner`, "partner", f.PartnerID)
		}
		if f.Types != nil {
			c.add(`type = ANY (@types)`, "types", w.args["types"])
		}
		return w, c
	}
	if f.IMEIs != nil {
		w.add(`imei = ANY (@imeis)`, "imeis", slices.Sorted(maps.Keys(f.IMEIs)))
	}
	if f.Status != "" {
		w.add(`status = @status`, "status", f.Status)
	}
	return w, nil
}

// pageSQL is the statement of the page of the events w keeps, by time then
// id, with a time from from on (w's start when zero) and before to (up to
// w's end when zero), skipping offset and keeping limit (all when 0). A
// page whose offset is at most its limit is read in order from the index,
// rows and all; a page further on reads its ids from the index, then each
// of its rows by its key (a lateral subquery, whose LIMIT keeps the
// planner from making it a join, which may hash every row of the window),
// so that the rows it skips are not read. Each row comes with its files
// and, when named, the name of its device. The narrower from and to are,
// the fewer partitions the statement names: a plan over a month's
// partitions of the events and of their files takes longer than reading a
// page.
func (w *eventFilter) pageSQL(from, to time.Time, p store.Page, named bool) (string, pgx.NamedArgs) {
	args := maps.Clone(w.args)
	lo, hi := w.bounds()
	if !from.IsZero() && from.After(w.start) {
		lo = `>= @from`
		args["from"] = from
	}
	if !to.IsZero() && (w.end.IsZero() || !to.After(w.end)) {
		hi = `< @to`
		args["to"] = to
	}
	rowWindow := ""
	for _, c := range []string{lo, hi} {
		if c != "" {
			rowWindow += ` AND e.time ` + c
		}
	}
	args["offset"] = max(p.Offset, 0)
	args["limit"] = nil // LIMIT NULL: all
	if p.Limit > 0 {
		args["limit"] = p.Limit
	}
	columns := eventColumnsWithin(lo, hi)
	if named {
		// The name while the device holds the event (store.Device.HoldsEvent):
		// after a move, its name is its new owner's.
		columns += `, coalesce((SELECT d.name FROM devices d WHERE d.imei = e.imei AND d.ownership = e.ownership
			AND (e.ownership <> 0 OR (d.organization_id = e.organization_id AND e.created_at >= d.created_at))), '')`
	}
	if p.Limit > 0 && p.Offset <= p.Limit {
		// Near the window's start the rows are read in order from the
		// index as it is walked: the few skipped cost less than looking
		// each of the page's rows up again by its key.
		return `SELECT ` + columns + ` FROM (
		SELECT * FROM events WHERE ` + w.where(lo, hi) + `
		 ORDER BY time, id LIMIT @limit OFFSET @offset) e
	 ORDER BY e.time, e.id`, args
	}
	return `WITH page AS (
		SELECT id, time FROM events WHERE ` + w.where(lo, hi) + `
		 ORDER BY time, id LIMIT @limit OFFSET @offset)
	SELECT e.* FROM page CROSS JOIN LATERAL (
		SELECT ` + columns + `
		  FROM events e WHERE e.id = page.id AND e.time = page.time` + rowWindow + ` LIMIT 1) e
	 ORDER BY page.time, page.id`, args
}

// readPage scans the rows of a pageSQL statement, of which there are
// at most limit (0: not known). In a read-only
// transaction, which writes no media file, it keeps whether each file of
// the page is uploaded, for mediaFiles.Uploaded to answer without another
// round trip.
func (s events) readPage(rows pgx.Rows, named bool, limit int) ([]store.OrgEvent, error) {
	defer rows.Close()
	p := pipeOf(s.t)
	keep := p != nil && p.readOnly
	var name string
	var more []any
	if named {
		more = append(more, &name)
	}
	scan := newEventScanner(more...)
	out := make([]store.OrgEvent, 0, min(max(limit, 0), maxPageAhead))
	for rows.Next() {
		name = ""
		out = append(out, store.OrgEvent{})
		o := &out[len(out)-1]
		uploaded, err := scan.scan(rows, &o.Event, keep)
		if err != nil {
			return nil, classify(err)
		}
		if uploaded != nil {
			s.t.keepUploaded(&o.Event, uploaded)
		}
		o.DeviceName = name
	}
	if len(out) == 0 {
		out = nil
	}
	return out, classify(rows.Err())
}

// maxPageAhead bounds the events readPage makes room for before it reads
// them.
const maxPageAhead = 1000

// countedPage returns the page p of the events w keeps, by time then id,
// and how many it keeps, counted from the index: both statements go in
// one round trip.
func (s events) countedPage(w *eventFilter, p store.Page, named bool) ([]store.OrgEvent, int, error) {
	if w.empty() {
		return nil, 0, nil
	}
	if err := s.t.planPages(); err != nil {
		return nil, 0, err
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT count(*) FROM events WHERE `+w.where(w.bounds()), w.args)
	sql, args := w.pageSQL(time.Time{}, time.Time{}, p, named)
	b.Queue(sql, args)
	br := s.t.pg.SendBatch(s.t.ctx, b)
	defer br.Close()
	var total int
	if err := br.QueryRow().Scan(&total); err != nil {
		return nil, 0, classify(err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, 0, classify(err)
	}
	page, err := s.readPage(rows, named, p.Limit)
	if err != nil {
		return nil, 0, err
	}
	return page, total, classify(br.Close())
}

// unitCounts are the counts kept of the events a page's filter keeps, by
// a unit of time: the hours of an organization (event_hours), the days of
// a device (device_event_days). Each row holds a count of one unit, whose
// start is in column, under the conditions conds (with args); the rows of
// a unit are summed.
type unitCounts struct {
	unit          time.Duration
	table, column string
	conds         []string
	args          pgx.NamedArgs
}

// newUnitCounts are the counts of table, whose rows count by unit from
// their column.
func newUnitCounts(unit time.Duration, table, column string) *unitCounts {
	return &unitCounts{unit: unit, table: table, column: column, args: pgx.NamedArgs{}}
}

// add adds cond, which names the argument name, set to v.
func (c *unitCounts) add(cond, name string, v any) {
	c.conds = append(c.conds, cond)
	c.args[name] = v
}

// sql is the statement of the counts of the units from @first to @last
// (exclusive) that are not 0, in order: each unit's start and count.
func (c *unitCounts) sql() string {
	conds := append(slices.Clone(c.conds), c.column+` >= @first`, c.column+` < @last`)
	return `SELECT ` + c.column + `, sum(events)::bigint FROM ` + c.table + ` WHERE ` + strings.Join(conds, " AND ") +
		` GROUP BY 1 HAVING sum(events) <> 0 ORDER BY 1`
}

// span is a stretch of a window that the counts say how many events of
// the page's filter hold: a whole unit, or one of the window's partial
// first and last units. It reaches from lo to hi (exclusive), the last
// partial unit to the window's end (hi zero).
type span struct {
	lo, hi time.Time
	n      int
}

// queuePageWarmers queues on b the statements of the first page of the
// event lists read most, built as those pages build them: a device's
// (its owner's events: an ownership other than 0) and an organization's
// with its devices' names, with a partner and without, over a window with
// partial units at both ends. The window is long before any event, so
// that run on a new connection (warmPages) they read nothing: initial
// pruning leaves out every partition.
func queuePageWarmers(b *pgx.Batch) {
	start := time.Date(2000, 1, 1, 0, 30, 0, 0, time.UTC)
	end := start.Add(30 * 24 * time.Hour)
	first := func(w *eventFilter, c *unitCounts, named bool) {
		q, _ := w.countsBy(c)
		q.queue(b)
		sql, args := w.pageSQL(time.Time{}, q.first.Add(c.unit), store.Page{Limit: 100}, named)
		b.Queue(sql, args)
	}
	w, c := deviceEventFilter("", store.DeviceEventFilter{Start: start, End: end, Holder: &store.Device{Ownership: 1}})
	first(w, c, false)
	for _, partner := range []int64{0, 1} {
		w, c := orgEventFilter(0, store.OrgEventFilter{Start: start, End: end, PartnerID: partner})
		first(w, c, true)
	}
}

// countsRead is the first round trip of spannedPage: the counts of a
// window's whole units, from first to last (exclusive), and of its partial
// first (lead) and last (trail) units from the index.
type countsRead struct {
	w           *eventFilter
	c           *unitCounts
	first, last time.Time
	lead, trail bool
}

// countsBy is the counts' read of w's window by c's units; whole is
// false when the window holds no whole unit.
func (w *eventFilter) countsBy(c *unitCounts) (q countsRead, whole bool) {
	// Whole units from first (the first unit that starts in the window)
	// to last (exclusive: the unit the window's last microsecond is in).
	first := w.start.Truncate(c.unit)
	if first.Before(w.start) {
		first = first.Add(c.unit)
	}
	last := w.end.Add(time.Microsecond).Truncate(c.unit)
	q = countsRead{w: w, c: c, first: first, last: last, lead: w.start.Before(first), trail: !w.end.Before(last)}
	return q, first.Before(last)
}

// queue queues the read's statements on b: the lead's count, the trail's,
// then the units' counts.
func (q countsRead) queue(b *pgx.Batch) {
	edge := func(lo, hi string, bound string, at time.Time) {
		args := maps.Clone(q.w.args)
		args[bound] = at
		b.Queue(`SELECT count(*) FROM events WHERE `+q.w.where(lo, hi), args)
	}
	if q.lead {
		edge(`>= @start`, `< @first`, "first", q.first)
	}
	if q.trail {
		edge(`>= @last`, `< @until`, "last", q.last)
	}
	args := maps.Clone(q.c.args)
	args["first"], args["last"] = q.first, q.last
	b.Queue(q.c.sql(), args)
}

// spannedPage returns the page p (p.Limit > 0) of the events that w keeps,
// whose number c counts by unit, and how many it keeps. One round trip
// reads the counts of the window's whole units and counts its partial
// first and last units from the index; a second reads the page from the
// span its offset lands in, skipping the rest of the offset by the index,
// up to the end of the span its last event is in. A unit divides a day
// (an hour, a day): units then start at UTC times, since Truncate counts
// from the zero time, which is a UTC midnight.
func (s events) spannedPage(w *eventFilter, c *unitCounts, p store.Page, named bool) ([]store.OrgEvent, int, error) {
	if w.empty() {
		return nil, 0, nil
	}
	q, whole := w.countsBy(c)
	if !whole {
		// No whole unit: at most two partial ones, counted from the index.
		return s.countedPage(w, p, named)
	}
	if err := s.t.planPages(); err != nil {
		return nil, 0, err
	}
	b := &pgx.Batch{}
	q.queue(b)
	first, last, lead, trail := q.first, q.last, q.lead, q.trail

	var spans []span
	br := s.t.pg.SendBatch(s.t.ctx, b)
	defer br.Close()
	var leadN, trailN int
	if lead {
		if err := br.QueryRow().Scan(&leadN); err != nil {
			return nil, 0, classify(err)
		}
		spans = append(spans, span{w.start, first, leadN})
	}
	if trail {
		if err := br.QueryRow().Scan(&trailN); err != nil {
			return nil, 0, classify(err)
		}
	}
	rows, err := br.Query()
	if err != nil {
		return nil, 0, classify(err)
	}
	var at time.Time
	var n int
	_, err = pgx.ForEachRow(rows, []any{&at, &n}, func() error {
		spans = append(spans, span{at, at.Add(c.unit), n})
		return nil
	})
	if err != nil {
		return nil, 0, classify(err)
	}
	if err := br.Close(); err != nil {
		return nil, 0, classify(err)
	}
	if trail {
		spans = append(spans, span{last, time.Time{}, trailN})
	}
	total := 0
	for _, sp := range spans {
		total += sp.n
	}
	if p.Offset >= total {
		return nil, total, nil
	}

	// The span the offset lands in, and the one the page's last event is
	// in: the page is read from the first up to the end of the second,
	// which leaves out the partitions of the units with no event after
	// it.
	i, before := 0, 0
	for before+spans[i].n <= p.Offset {
		before += spans[i].n
		i++
	}
	from, rest := spans[i].lo, p.Offset-before
	lastPos := min(p.Offset+p.Limit, total) - 1
	j := i
	for before+spans[j].n <= lastPos {
		before += spans[j].n
		j++
	}
	sql, pageArgs := w.pageSQL(from, spans[j].hi, store.Page{Limit: p.Limit, Offset: rest}, named)
	rows, err = s.t.pg.Query(s.t.ctx, sql, pageArgs)
	if err != nil {
		return nil, 0, classify(err)
	}
	page, err := s.readPage(rows, named, min(p.Limit, total-p.Offset))
	return page, total, err
}

// plainEvents returns the events of page without their devices' names.
func plainEvents(page []store.OrgEvent) []store.Event {
	if page == nil {
		return nil
	}
	out := make([]store.Event, len(page))
	for i := range page {
		out[i] = page[i].Event
	}
	return out
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
	return collect(s.t, scanValue(func(row pgx.Row) (*store.Event, error) { return scanEvent(row) }), sql, args...)
}
