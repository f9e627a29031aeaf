package postgres

import (
	"slices"
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
	orgSettings map[int64]orgSettingsRow
	receivers   map[receiverKey]bool
	rows        map[memoKey]memoRow
}

// orgSettingsRow is the row of an organization's settings as read, decoded
// afresh for each reader (the store may change what it is given); found
// is false when the organization has none.
type orgSettingsRow struct {
	found                                   bool
	forbidLegacy                            bool
	device, events, privacy, modes, control []byte
	updatedAt                               time.Time
}

// receiverKey is an organization and a webhook type.
type receiverKey struct {
	org int64
	typ string
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
	tableDevices        = "devices"
	tableDeviceHotspots = "device_hotspots"
	tableDeviceTracks   = "device_tracks"
	tableDeviceLinks    = "device_links"
	tableDeviceSettings = "device_settings"
	tableOrganizations  = "organizations"
)

// deviceTables are the tables keyed by a device's IMEI.
var deviceTables = []string{tableDevices, tableDeviceHotspots, tableDeviceTracks, tableDeviceLinks, tableDeviceSettings}

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
	return classify(pgx.ScanRow(t.scanTypes(), r.fields, r.values, fields...))
}

// scanTypes is the type map rows of the memo are scanned with: the
// connection's, or in a bulk transaction, whose COPYs may be using the
// connection meanwhile, one of its own.
func (t *tx) scanTypes() *pgtype.Map {
	if b := t.bulk; b != nil {
		return b.types
	}
	return t.pg.Conn().TypeMap()
}

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

// copyValues copies raw row values, NULLs (nil) kept.
func copyValues(raw [][]byte) [][]byte {
	out := make([][]byte, len(raw))
	for i, v := range raw {
		if v != nil {
			out[i] = slices.Clone(v)
		}
	}
	return out
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
}

// prefetchSpec is how Prefetch reads the rows of one table for a set of
// devices: the key as text, then the columns its Get reads.
type prefetchSpec struct {
	table string
	sql   string // $1 is the IMEIs
	// absent is true when a device without a row reads as "none" (the
	// row is keyed by the IMEI itself).
	absent bool
}

var prefetchSpecs = []prefetchSpec{
	{tableDevices, `SELECT imei, ` + deviceColumns + ` FROM devices WHERE imei = ANY($1)`, true},
	{tableDeviceHotspots, `SELECT imei, ` + hotspotColumns + ` FROM device_hotspots WHERE imei = ANY($1)`, true},
	{tableDeviceTracks, `SELECT imei, ` + deviceTrackColumns + ` FROM device_tracks WHERE imei = ANY($1)`, true},
	{tableDeviceLinks, `SELECT imei, ` + deviceLinkColumns + ` FROM device_links WHERE imei = ANY($1)`, true},
	{tableDeviceSettings, `SELECT imei, ` + deviceSettingsColumns + ` FROM device_settings WHERE imei = ANY($1)`, true},
	{tableOrganizations, `SELECT o.id::text, ` + organizationColumns + ` FROM organizations o
		WHERE o.id IN (SELECT organization_id FROM devices WHERE imei = ANY($1))`, false},
}

// Prefetch implements store.Prefetcher: the rows of imeis' devices, their
// settings, links, tracks and hotspots and their organizations, in one
// round trip (with the transaction's BEGIN and whatever it holds back).
func (t *tx) Prefetch(imeis []string) error {
	var want []string
	for _, imei := range imeis {
		if _, ok := t.memo.rows[memoKey{tableDevices, imei}]; !ok && !slices.Contains(want, imei) {
			want = append(want, imei)
		}
	}
	if len(want) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, s := range prefetchSpecs {
		b.Queue(s.sql, want)
	}
	br := t.pg.SendBatch(t.ctx, b)
	defer br.Close()
	for _, s := range prefetchSpecs {
		rows, err := br.Query()
		if err != nil {
			return classify(err)
		}
		seen := map[string]bool{}
		for rows.Next() {
			raw := rows.RawValues()
			key := string(raw[0])
			seen[key] = true
			t.remember(memoKey{s.table, key}, memoRow{found: true,
				fields: slices.Clone(rows.FieldDescriptions()[1:]), values: copyValues(raw[1:])})
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
	return classify(br.Close())
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
