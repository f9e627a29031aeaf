package postgres

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// memo keeps, for one transaction, what it read of records that are read
// by nearly every device message and written rarely: an organization's
// default settings and which webhook types it receives. A group commit
// runs the messages of many devices of few organizations in one
// transaction, and each would otherwise read the same rows again. Within
// a transaction a row reads the same until the transaction writes it
// (REPEATABLE READ and SERIALIZABLE), so the memo is exact as long as
// every write of these records forgets what it kept: their Put methods do.
// It is never shared between transactions.
type memo struct {
	receivers map[int64][]string // the webhook types each organization receives
	rows      map[memoKey]memoRow
	gps       map[string]gpsMemo               // by IMEI (gpssamples.go)
	queued    map[string][]store.QueuedCommand // by IMEI, read ahead (ViewDevice)
	// open holds, by IMEI, every open system alarm of a device whose
	// open_alarms rows were read ahead (Prefetch), by definition.
	open map[string]map[int64]int64
	aux  map[string]auxMemo // by IMEI, read ahead (Prefetch)
	// assignments holds each device's driver assignments, read ahead.
	assignments map[string][]store.DriverAssignment
	// activeDrivers holds the active drivers of an organization, by id,
	// read ahead for a device's configuration (ViewDriverCredentials).
	activeDrivers map[int64][]store.Driver
	// sessions holds each device's latest started driver session (nil:
	// none), read ahead.
	sessions map[string]*store.DriverSession
	// subscriptions holds an organization's webhook subscriptions.
	subscriptions map[int64][]store.WebhookSubscription
	// uploaded holds whether each file of the event pages a read-only
	// transaction read is uploaded (readPage).
	uploaded map[store.MediaRef]bool
}

// keepUploaded keeps whether each file of e is uploaded.
func (t *tx) keepUploaded(e *store.Event, uploaded []bool) {
	if t.memo.uploaded == nil {
		t.memo.uploaded = map[store.MediaRef]bool{}
	}
	for i, f := range e.Files {
		t.memo.uploaded[store.MediaRef{IMEI: e.IMEI, CameraID: f.CameraID, FileType: f.FileType, FileID: f.FileID}] = uploaded[i]
	}
}

// The rows a transaction read by key. A device message's rules read the
// same few rows of its device and organization several times (the device
// itself, its settings, link, track and hotspot, its organization), and a
// group commit reads them for many messages at once: rowMemo keeps each
// row as the server sent it, so a second read decodes it again without a
// round trip, and Prefetch reads those of a whole batch's devices in one.
// Every write of these rows goes through the record methods, which forget
// what they change (a device removed forgets all of the device's).

// memoKey names a row: its table and its key as text.
type memoKey struct{ table, key string }

// memoRow is a row as read: found is false when there was none.
type memoRow struct {
	found  bool
	fields []pgconn.FieldDescription
	values [][]byte
}

// The tables whose rows rowMemo keeps, and the columns each Get reads.
const (
	tableDevices           = "devices"
	tableDeviceHotspots    = "device_hotspots"
	tableDeviceTracks      = "device_tracks"
	tableDeviceLinks       = "device_links"
	tableDeviceSettings    = "device_settings"
	tableDeviceCredentials = "device_credentials"
	tableDeviceBilling     = "device_billing"
	tableOrganizations     = "organizations"
	tableOrgSettings       = "organization_settings"
	tableHealthStates      = "device_health_states"
	tableDrivers           = "drivers" // keyed by id
	tableWebhookSettings   = "webhook_settings"
	tableWebhookSecrets    = "webhook_secrets"
	tableWebhookEndpoints  = "webhook_endpoints" // keyed by organization and URL (endpointKey)
)

// deviceTables are the tables keyed by a device's IMEI.
var deviceTables = []string{tableDevices, tableDeviceHotspots, tableDeviceTracks, tableDeviceLinks, tableDeviceSettings,
	tableDeviceCredentials, tableDeviceBilling, tableHealthStates}

// getMemo scans into fields the row of table under key that sql (which
// takes args) reads, from the memo when this transaction read it before;
// store.ErrNotFound when there is none.
func getMemo(t *tx, table, key, sql string, fields []any, args ...any) error {
	k := memoKey{table, key}
	r, ok := t.memo.rows[k]
	if !ok {
		read := func() error {
			rows, err := t.pg.Query(t.ctx, sql, args...)
			if err != nil {
				return classify(err)
			}
			r, err = readMemoRow(rows)
			return classify(err)
		}
		var err error
		if b := t.bulk; b != nil {
			// A read of none of the tables a bulk transaction holds
			// writes for, which changes nothing it read ahead.
			err = b.quietly(read)
		} else {
			err = read()
		}
		if err != nil {
			return err
		}
		t.remember(k, r)
	}
	if !r.found {
		return store.NotFound("")
	}
	m, release := t.decodeTypes()
	defer release()
	return classify(pgx.ScanRow(m, r.fields, r.values, fields...))
}

// ReadAlong implements store.AlongReader: the rows of r that the
// transaction has not read go, one statement each, in the round trip of
// its next statement, and into the memo, where the record methods find
// them (getMemo). An API request reads the user its token names and, in
// the same round trip, the organization or device its path names. The
// statements are those of the Get methods, so a row reads the same either
// way.
func (t *tx) ReadAlong(r store.AlongReads) {
	p := pipeOf(t)
	if p == nil || p.closed || t.bulk != nil {
		return
	}
	along := func(table, key, sql string, arg any) {
		k := memoKey{table, key}
		if _, ok := t.memo.rows[k]; ok {
			return
		}
		for _, a := range p.along {
			if a.sql == sql && a.args[0] == arg {
				return
			}
		}
		p.along = append(p.along, alongRead{sql: sql, args: []any{arg}, keep: func(r memoRow) { t.remember(k, r) }})
	}
	for _, id := range r.Organizations {
		along(tableOrganizations, strconv.FormatInt(id, 10), getOrganizationSQL, id)
	}
	for _, imei := range r.Devices {
		along(tableDevices, imei, getDeviceSQL, imei)
	}
}

var _ store.AlongReader = (*tx)(nil)

// decodeTypes is the type map the memo's rows are decoded with, and what
// gives it back: the connection's while the transaction has the connection
// to itself, otherwise one of typeMaps. A view that read ahead has given
// its connection back (and its type map with it), and a bulk
// transaction's COPYs may be encoding rows with the connection's type map
// on their own goroutine meanwhile (bulk.go); a pgtype.Map is not safe
// for use by two goroutines at once.
func (t *tx) decodeTypes() (*pgtype.Map, func()) {
	if p := pipeOf(t); t.bulk != nil || p != nil && p.closed {
		m := typeMaps.Get().(*pgtype.Map)
		return m, func() { typeMaps.Put(m) }
	}
	return t.pg.Conn().TypeMap(), func() {}
}

// typeMaps decode the memo's rows off the connection (decodeTypes): the
// engine uses PostgreSQL's own types only, which every new map knows.
var typeMaps = sync.Pool{New: func() any { return pgtype.NewMap() }}

// readMemoRow reads the first row of rows, the values copied out of the
// connection's buffer, and closes rows.
func readMemoRow(rows pgx.Rows) (memoRow, error) {
	defer rows.Close()
	var r memoRow
	if rows.Next() {
		r = memoRow{found: true, fields: slices.Clone(rows.FieldDescriptions()), values: copyValues(rows.RawValues())}
	}
	rows.Close()
	return r, rows.Err()
}

// copyValues copies raw row values, NULLs (nil) kept, into one buffer.
func copyValues(raw [][]byte) [][]byte {
	n := 0
	for _, v := range raw {
		n += len(v)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(raw))
	for i, v := range raw {
		if v != nil {
			at := len(buf)
			buf = append(buf, v...)
			out[i] = buf[at:len(buf):len(buf)]
		}
	}
	return out
}

// sharedFields clones the field descriptions of one statement's rows
// once, for the memo rows of all of them (memoRow.fields is only read).
type sharedFields struct {
	from, to int
	fields   []pgconn.FieldDescription
}

// of returns the rows' fields from from to to, cloned at the first call
// for that span.
func (f *sharedFields) of(fields []pgconn.FieldDescription, from, to int) []pgconn.FieldDescription {
	if f.fields == nil || f.from != from || f.to != to {
		f.from, f.to, f.fields = from, to, slices.Clone(fields[from:to])
	}
	return f.fields
}

// remember keeps r under k.
func (t *tx) remember(k memoKey, r memoRow) {
	if t.memo.rows == nil {
		t.memo.rows = map[memoKey]memoRow{}
	}
	t.memo.rows[k] = r
}

// forget drops the row of table under key, which this transaction writes.
func (t *tx) forget(table, key string) { delete(t.memo.rows, memoKey{table, key}) }

// forgetTable drops every row of table (a statement wrote many).
func (t *tx) forgetTable(table string) {
	for k := range t.memo.rows {
		if k.table == table {
			delete(t.memo.rows, k)
		}
	}
}

// forgetDevice drops every row of the device imei: removing a device
// removes its rows in the other tables with it.
func (t *tx) forgetDevice(imei string) {
	for _, table := range deviceTables {
		t.forget(table, imei)
	}
	delete(t.memo.gps, imei)
	delete(t.memo.queued, imei)
	delete(t.memo.open, imei)
	delete(t.memo.aux, imei)
	delete(t.memo.assignments, imei)
	delete(t.memo.sessions, imei)
}

// prefetchSpec is how Prefetch reads the rows of one table for a set of
// devices: the key as text, then the columns its Get reads.
type prefetchSpec struct {
	table string
	sql   string // $1 is the IMEIs
	// absent is true when a device without a row reads as "none" (the
	// row is keyed by the IMEI itself).
	absent bool
	// found is true when the query answers a key without a row too: its
	// column after the key says whether the row exists.
	found bool
}

// The rows of a device's organization that both a group commit and a
// device's own view read ahead, found through the devices ($1 the IMEIs).
var deviceSpecs = orgSpecs(`IN (SELECT organization_id FROM devices WHERE imei = ANY($1))`)

// orgSpecs reads the rows of the organizations whose id is as where says:
// the organization and its settings.
func orgSpecs(where string) []prefetchSpec {
	return []prefetchSpec{
		{table: tableOrganizations, sql: `SELECT o.id::text, ` + organizationColumns + ` FROM organizations o
			WHERE o.id ` + where},
		{table: tableOrgSettings, sql: `SELECT o.id::text, s.organization_id IS NOT NULL, ` + orgSettingsTable.listAs("s") + `
			FROM organizations o LEFT JOIN organization_settings s ON s.organization_id = o.id
			WHERE o.id ` + where, found: true},
	}
}

// The rows of the organizations a group commit names (store.ReadAhead),
// by their ids ($1), which cost no lookup of the devices.
var prefetchOrgSpecs = orgSpecs(`= ANY($1::bigint[])`)

// The rows keyed by a device's IMEI, at most one per table, that both read
// ahead: the device and its revision, its hotspot, track, link and
// settings.
var deviceRows = []rowSpec{
	{table: tableDevices, columns: deviceMemoColumns},
	hotspotTable.rowSpec(),
	{table: tableDeviceTracks, columns: deviceTrackColumns},
	{table: tableDeviceLinks, columns: deviceLinkColumns},
	deviceSettingsTable.rowSpec(),
}

// The rows a group commit reads ahead for its devices: a status report
// also reads the device's health state.
var (
	prefetchSpecs = deviceSpecs
	prefetchRows  = joinRows(devicesOfArray, append(slices.Clip(deviceRows), healthStateTable.rowSpec()))
)

// The rows the views of devices read ahead (ViewDevice, viewgather.go):
// the device's, its credential, and its organization and the
// organization's settings.
var viewRows = joinRows(devicesOfArray, append(slices.Clip(deviceRows), credentialTable.rowSpec(),
	orgRowOrganization, orgRowSettings))

// rowSpec is a table with at most one row per device, keyed by its IMEI
// (column imei), and the columns its Get reads; or, when org is set, a
// row of the device's organization, keyed by the organization's id.
type rowSpec struct {
	table, columns string
	// org, when set, reads the row of the organization of the joined
	// devices row (which must come first): from is the lateral's FROM
	// clause over organizations o, and found says whether the row is
	// there (the organization's settings may not be).
	org *orgRow
}

// orgRow is how a joined read finds a row of a device's organization.
type orgRow struct{ from, found string }

// The rows of a device's organization a joined read may carry: the
// organization and its settings, as orgSpecs reads them.
var (
	orgRowOrganization = rowSpec{table: tableOrganizations, columns: organizationColumns,
		org: &orgRow{from: `organizations o`, found: `true`}}
	orgRowSettings = rowSpec{table: tableOrgSettings, columns: orgSettingsTable.listAs("s"),
		org: &orgRow{from: `organizations o LEFT JOIN organization_settings s ON s.organization_id = o.id`,
			found: `s.organization_id IS NOT NULL`}}
)

// joinedRows reads the rows of several rowSpecs of each device in one
// statement: $1 is the IMEIs, and each row of the answer is an IMEI
// followed, table by table, by a flag that says whether the table has a
// row for it (NULL when not) and the row's columns. An organization's row
// is preceded by the organization's id (NULL when the device is not
// there) and its flag says whether the row is there.
//
// Each lateral subquery ends in LIMIT 1 (a key has one row at most), which
// keeps the planner from flattening it into a join: flattened, a batch of
// a hundred devices was planned as hash joins over every row of each
// table, which grows with the fleet, where one index probe per device
// and table grows with the batch.
type joinedRows struct {
	specs []rowSpec
	sql   string
	// widths are the number of columns of each spec.
	widths []int
}

// The devices a joined read is of: those of the array $1. Left to itself
// PostgreSQL would plan such a read for its values at every execution
// (the generic plan of a read over an array is estimated dearer than the
// plans for its values, so it is never kept): a group commit's read-ahead
// (queueDeviceReads) and the views' connections (viewPoolConfig) run the
// generic plan from the first execution.
const devicesOfArray = `unnest($1::text[])`

// joinRows is the joinedRows of specs for the devices of source.
func joinRows(source string, specs []rowSpec) joinedRows {
	j := joinedRows{specs: specs}
	var b strings.Builder
	b.WriteString(`SELECT i.imei`)
	for n := range specs {
		fmt.Fprintf(&b, `, r%d.*`, n)
	}
	b.WriteString(` FROM ` + source + ` AS i (imei)`)
	for n, s := range specs {
		if o := s.org; o != nil {
			fmt.Fprintf(&b, ` LEFT JOIN LATERAL (SELECT o.id::text AS key, %s AS found, %s FROM %s WHERE o.id = r0.organization_id LIMIT 1) r%d ON true`,
				o.found, s.columns, o.from, n)
		} else {
			fmt.Fprintf(&b, ` LEFT JOIN LATERAL (SELECT true AS found, %s FROM %s WHERE imei = i.imei LIMIT 1) r%d ON true`,
				s.columns, s.table, n)
		}
		j.widths = append(j.widths, columnCount(s.columns))
	}
	j.sql = b.String()
	return j
}

// lead is the number of columns before spec s's own in each row of a
// joined read: its flag, and an organization's row's key before it.
func (s rowSpec) lead() int {
	if s.org != nil {
		return 2
	}
	return 1
}

// columnCount is the number of columns of a select list: its commas
// outside parentheses, and one.
func columnCount(list string) int {
	n, depth := 1, 0
	for _, c := range list {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				n++
			}
		}
	}
	return n
}

// read keeps the rows the statement of j answers for the devices it
// was asked about.
func (j joinedRows) read(t *tx, br pgx.BatchResults) error {
	return j.each(br, func(_ string, k memoKey, r memoRow) { t.remember(k, r) })
}

// each calls keep with each row the statement of j answers, and the
// device it was read for.
func (j joinedRows) each(br pgx.BatchResults, keep func(imei string, k memoKey, r memoRow)) error {
	rows, err := br.Query()
	if err != nil {
		return classify(err)
	}
	defer rows.Close()
	want := j.columns()
	var shared []sharedFields
	for rows.Next() {
		raw, fields := rows.RawValues(), rows.FieldDescriptions()
		if len(raw) != want {
			return fmt.Errorf("store: postgres: the read-ahead of %d columns answered %d", want, len(raw))
		}
		imei := string(raw[0])
		at := 1
		if shared == nil {
			shared = make([]sharedFields, len(j.specs))
		}
		for n, s := range j.specs {
			key, flag, w := imei, raw[at], j.widths[n]
			found := flag != nil
			if s.org != nil {
				if raw[at] == nil {
					// No device, so no organization to name.
					at += s.lead() + w
					continue
				}
				key, flag = string(raw[at]), raw[at+1]
				found = isTrue(flag)
			}
			r := memoRow{}
			if found {
				from := at + s.lead()
				r = memoRow{found: true, fields: shared[n].of(fields, from, from+w), values: copyValues(raw[from : from+w])}
			}
			keep(imei, memoKey{s.table, key}, r)
			at += s.lead() + w
		}
	}
	return classify(rows.Err())
}

// columns is the number of columns of each row j's statement answers.
func (j joinedRows) columns() int {
	n := 1
	for i, s := range j.specs {
		n += s.lead() + j.widths[i]
	}
	return n
}

// isTrue reports whether raw is a boolean true, in either format.
func isTrue(raw []byte) bool {
	return string(raw) == "t" || len(raw) == 1 && raw[0] == 1
}

// gpsAhead is how long before a group commit's time Prefetch looks for
// its devices' latest GPS samples: a device that sends GPS sent some
// within it, and the range keeps the read to the newest day partitions
// (today's and yesterday's, the days ready ahead, and the default). A
// device whose latest sample is older reads it when asked (Latest).
const gpsAhead = 24 * time.Hour

// prefetchGPS reads the latest GPS sample since $2 of each device of $1.
// It runs with sequential scans off (queueDeviceReads): the newest day
// partitions start empty, and a plan made while today's was (a generic
// plan, which the connection keeps until the partition is next analysed)
// scans the whole partition for every device once it has filled, where
// the index finds each device's latest sample in a few pages at any size.
const prefetchGPS = `SELECT i.imei, s.* FROM unnest($1::text[]) AS i (imei)
	CROSS JOIN LATERAL (SELECT ` + gpsColumns + `, ownership FROM gps_samples g
		WHERE g.imei = i.imei AND g.sampled_at >= $2 ORDER BY g.sampled_at DESC LIMIT 1) s`

// prefetchReceivers reads the webhook types the organizations of the
// devices of $1 receive; prefetchOrgReceivers those of the organizations
// of $1.
const (
	prefetchReceivers = `SELECT o.id, (SELECT ` + receiverTypes + ` FROM webhook_receivers r WHERE r.organization_id = o.id)
	FROM organizations o WHERE o.id IN (SELECT organization_id FROM devices WHERE imei = ANY($1))`
	prefetchOrgReceivers = `SELECT o.id, (SELECT ` + receiverTypes + ` FROM webhook_receivers r WHERE r.organization_id = o.id)
	FROM organizations o WHERE o.id = ANY($1::bigint[])`
)

// viewQueued reads the queued commands of the devices $1.
const viewQueued = `SELECT ` + queuedCommandColumns + ` FROM queued_commands WHERE imei = ANY($1) ORDER BY imei, seq`

// Prefetch implements store.Prefetcher: the rows of the devices a.IMEIs
// names, their settings, links, tracks, hotspots and health states, their
// organizations and their settings (by the ids a.Organizations gives, when
// it does), their open system alarms, auxiliary cameras and driver
// assignments and latest driver sessions, and their latest GPS samples
// since gpsAhead before a.Now, in one round trip (with the transaction's
// BEGIN and whatever it holds back). The same round trip draws the event
// ids the batch may need (eventids.go), unless the transaction is
// read-only: a view reads ahead too (store.Tx.readAhead), and a draw,
// which advances the events' sequence, would fail it.
func (t *tx) Prefetch(a store.ReadAhead) error {
	want := t.unread(a.IMEIs)
	draw := 0
	if p := pipeOf(t); p == nil || !p.readOnly {
		draw = t.demand.toDraw(len(a.IMEIs))
	}
	if len(want) == 0 && draw == 0 {
		return nil
	}
	b := &pgx.Batch{}
	if draw > 0 {
		queueEventIDs(b, draw)
	}
	if len(want) > 0 {
		queueDeviceReads(b, a, want, t.takeKnownGPS(a, want))
	}
	br := t.pg.SendBatch(t.ctx, b)
	defer br.Close()
	if draw > 0 {
		if err := t.readEventIDs(br); err != nil {
			return err
		}
	}
	if len(want) > 0 {
		if err := t.readDeviceReads(br, a, want); err != nil {
			return err
		}
	}
	return classify(br.Close())
}

// orgReads are the statements that read the organizations of a group
// commit's devices: by the ids a names, when it does, else through the
// devices want; and what $1 is for them.
func orgReads(a store.ReadAhead, want any) (specs []prefetchSpec, receivers string, key any) {
	if len(a.Organizations) > 0 {
		return prefetchOrgSpecs, prefetchOrgReceivers, a.Organizations
	}
	return prefetchSpecs, prefetchReceivers, want
}

// textArray is the text form of a text[] value of items, which the server
// parses: a batch that passes one list of devices to several statements
// encodes it once, where pgx would encode a []string anew for each,
// boxing every element.
func textArray(items []string) string {
	var b strings.Builder
	b.Grow(2 + 20*len(items))
	b.WriteByte('{')
	for i, s := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, c := range []byte(s) {
			if c == '"' || c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// queueDeviceReads queues Prefetch's reads of the devices want, and of
// the latest GPS samples of the devices gps.
//
// The two reads over the array of devices, their rows and their latest
// GPS samples, run on generic plans, made at their first execution on a
// connection and kept (plan_cache_mode), with sequential scans off.
// Planned for its values, a read over an array was planned again at every
// group commit (its generic plan is estimated dearer than the plans for
// its values, whatever they are), which cost the server several times
// what running it did. Each of the two finds its rows by key, one index
// probe per device and table, and with sequential scans off a generic
// plan made while a table was empty still probes the index
// (TestReadAheadKeepsToTheIndex), as the latest GPS sample of each device
// does in today's day partition as it fills. The other reads, of the
// devices' organizations and of rows by IMEI = ANY, are planned as the
// server chooses, which keeps a generic plan for them after a few
// executions.
func queueDeviceReads(b *pgx.Batch, a store.ReadAhead, want, gps []string) {
	devices := textArray(want)
	specs, receivers, key := orgReads(a, devices)
	b.Queue(readAheadPlans)
	b.Queue(prefetchRows.sql, devices)
	b.Queue(prefetchGPS, textArray(gps), timeBound(a.Now.Add(-gpsAhead)))
	b.Queue(`SET LOCAL plan_cache_mode TO DEFAULT`)
	b.Queue(`SET LOCAL enable_seqscan TO DEFAULT`)
	for _, s := range specs {
		b.Queue(s.sql, key)
	}
	b.Queue(receivers, key)
	b.Queue(prefetchOpenAlarms, devices)
	b.Queue(prefetchAuxCameras, devices)
	b.Queue(prefetchAssignments, devices)
	b.Queue(prefetchSessions, devices)
}

// readAheadPlans sets what queueDeviceReads' reads over an array of
// devices run with, up to the two SET LOCALs that follow them.
const readAheadPlans = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true)`

// readDeviceReads keeps the answers to queueDeviceReads' reads.
func (t *tx) readDeviceReads(br pgx.BatchResults, a store.ReadAhead, want []string) error {
	specs, _, _ := orgReads(a, want)
	if _, err := br.Exec(); err != nil {
		return classify(err)
	}
	if err := prefetchRows.read(t, br); err != nil {
		return err
	}
	if err := t.readGPSAhead(br); err != nil {
		return err
	}
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return classify(err)
		}
	}
	if err := t.readSpecs(br, specs, nil); err != nil {
		return err
	}
	if err := t.readReceiversAhead(br); err != nil {
		return err
	}
	if err := t.readOpenAlarmsAhead(br, want); err != nil {
		return err
	}
	if err := t.readAuxCamerasAhead(br, want); err != nil {
		return err
	}
	if err := t.readAssignmentsAhead(br, want); err != nil {
		return err
	}
	return t.readSessionsAhead(br, want)
}

// What an authentication's view reads ahead (store.ViewAuthentication),
// in one statement: the device and its credential, and its
// organization's settings.
var authRows = joinRows(devicesOfArray, []rowSpec{{table: tableDevices, columns: deviceMemoColumns},
	credentialTable.rowSpec(), orgRowSettings})

// unread lists the devices of imeis, once each, whose rows t has not read.
func (t *tx) unread(imeis []string) []string {
	var want []string
	for _, imei := range imeis {
		if _, ok := t.memo.rows[memoKey{tableDevices, imei}]; !ok && !slices.Contains(want, imei) {
			want = append(want, imei)
		}
	}
	return want
}

// readSpecs keeps the rows the reads of specs, each queued with its key
// argument, answer for the devices want.
func (t *tx) readSpecs(br pgx.BatchResults, specs []prefetchSpec, want []string) error {
	for _, s := range specs {
		rows, err := br.Query()
		if err != nil {
			return classify(err)
		}
		seen := map[string]bool{}
		var shared sharedFields
		for rows.Next() {
			raw := rows.RawValues()
			key := string(raw[0])
			seen[key] = true
			from, values := 1, raw[1:]
			if s.found {
				if !isTrue(values[0]) {
					t.remember(memoKey{s.table, key}, memoRow{})
					continue
				}
				from, values = 2, values[1:]
			}
			fields := shared.of(rows.FieldDescriptions(), from, len(raw))
			t.remember(memoKey{s.table, key}, memoRow{found: true, fields: fields, values: copyValues(values)})
		}
		if err := rows.Err(); err != nil {
			return classify(err)
		}
		if s.absent {
			for _, imei := range want {
				if !seen[imei] {
					t.remember(memoKey{s.table, imei}, memoRow{})
				}
			}
		}
	}
	return nil
}

// knownGPSAhead is how old a latest GPS sample that a device's connection
// knows (store.ReadAhead.LatestGPS) may be for Prefetch to take it: half
// the shortest retention, so that no purge, on a node whose clock is a
// little ahead, can have deleted it.
const knownGPSAhead = 12 * time.Hour

// takeKnownGPS keeps the latest GPS samples that the connections of the
// devices want know (a.LatestGPS), those of knownGPSAhead or newer, and
// returns the devices of want whose latest samples are still to read.
// The connection a device's messages arrive on writes its samples, and
// nothing else does while it holds the device, so the sample it knows is
// the latest stored; a rerun transaction is not given them (Committer).
func (t *tx) takeKnownGPS(a store.ReadAhead, want []string) []string {
	if len(a.LatestGPS) == 0 {
		return want
	}
	since := a.Now.Add(-knownGPSAhead)
	read := make([]string, 0, len(want))
	for _, imei := range want {
		k, ok := a.LatestGPS[imei]
		if _, memo := t.memo.gps[imei]; memo || !ok || k.Point.Time.Before(since) {
			read = append(read, imei)
			continue
		}
		p := k.Point
		p.Time = milli(p.Time)
		if t.memo.gps == nil {
			t.memo.gps = map[string]gpsMemo{}
		}
		t.memo.gps[imei] = gpsMemo{latest: gpsKnown{at: p, ownership: k.Ownership, ok: true}}
	}
	return read
}

// KnownLatestGPS implements store.GPSKnower.
func (t *tx) KnownLatestGPS(imei string) (store.LatestGPS, bool) {
	m, ok := t.memo.gps[imei]
	if !ok || !m.latest.ok {
		return store.LatestGPS{}, false
	}
	return store.LatestGPS{Point: m.latest.at, Ownership: m.latest.ownership}, true
}

// readGPSAhead keeps the latest GPS samples prefetchGPS answers.
func (t *tx) readGPSAhead(br pgx.BatchResults) error {
	rows, err := br.Query()
	if err != nil {
		return classify(err)
	}
	for rows.Next() {
		var imei string
		var p store.GPSPoint
		var ownership int64
		if err := rows.Scan(append(append([]any{&imei}, gpsFields(&p)...), &ownership)...); err != nil {
			rows.Close()
			return classify(err)
		}
		if t.memo.gps == nil {
			t.memo.gps = map[string]gpsMemo{}
		}
		t.memo.gps[imei] = gpsMemo{latest: gpsKnown{at: p, ownership: ownership, ok: true}}
	}
	return classify(rows.Err())
}

// readReceiversAhead keeps the webhook types prefetchReceivers answers.
func (t *tx) readReceiversAhead(br pgx.BatchResults) error {
	rows, err := br.Query()
	if err != nil {
		return classify(err)
	}
	for rows.Next() {
		var org int64
		var types []string
		if err := rows.Scan(&org, &types); err != nil {
			rows.Close()
			return classify(err)
		}
		t.rememberReceivers(org, types)
	}
	return classify(rows.Err())
}

// readQueuedAhead keeps the queued commands viewQueued answers for
// the devices want.
func (t *tx) readQueuedAhead(br pgx.BatchResults, want []string) error {
	rows, err := br.Query()
	if err != nil {
		return classify(err)
	}
	cmds, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.QueuedCommand, error) {
		return scanQueuedCommand(row)
	})
	if err != nil {
		return classify(err)
	}
	if t.memo.queued == nil {
		t.memo.queued = map[string][]store.QueuedCommand{}
	}
	for _, imei := range want {
		t.memo.queued[imei] = []store.QueuedCommand{}
	}
	for _, c := range cmds {
		t.memo.queued[c.IMEI] = append(t.memo.queued[c.IMEI], c)
	}
	return nil
}

// memoRowOf is the row getMemo reads, as a pgx.Row for scanners that take one.
type memoRowOf struct {
	t          *tx
	table, key string
	sql        string // its $1 is key
}

// Scan implements pgx.Row.
func (r memoRowOf) Scan(dest ...any) error {
	return getMemo(r.t, r.table, r.key, r.sql, dest, r.key)
}
