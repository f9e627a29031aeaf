package postgres

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// deviceLinks are the device_links rows, by IMEI: the broker reads and
// writes one on every connection, a primary key lookup or upsert.
type deviceLinks struct{ t *tx }

// DeviceLinks implements store.DeviceStateRecords.
func (t *tx) DeviceLinks() store.DeviceLinkRecords { return deviceLinks{t} }

// deviceLinkColumns are the columns scanDeviceLink reads, in its order.
const deviceLinkColumns = `imei, presence, connection_id, connected_at, disconnected_at, last_seen, protocol_version,
	remote_addr, firmware, product_type, legacy, health, acked_config_version, config_acked_at, reported_config`

func scanDeviceLink(row pgx.Row) (*store.DeviceLink, error) {
	var l store.DeviceLink
	var health, reported []byte
	err := row.Scan(&l.IMEI, &l.Presence, &l.ConnectionID, zeroTime{&l.ConnectedAt}, zeroTime{&l.DisconnectedAt},
		zeroTime{&l.LastSeen}, &l.ProtocolVersion, &l.RemoteAddr, &l.Firmware, &l.ProductType, &l.Legacy, &health,
		&l.AckedConfigVersion, zeroTime{&l.ConfigAckedAt}, &reported)
	if err != nil {
		return nil, err
	}
	l.ReportedConfig = rawJSON(reported)
	if health != nil {
		l.Health = new(store.DeviceHealth)
		if err := json.Unmarshal(health, l.Health); err != nil {
			return nil, fmt.Errorf("store: decode the health of device %s: %w", l.IMEI, err)
		}
	}
	return &l, nil
}

// Get implements store.DeviceLinkRecords.
func (r deviceLinks) Get(imei string) (*store.DeviceLink, error) {
	l, err := scanDeviceLink(memoRowOf{r.t, tableDeviceLinks, imei, `SELECT ` + deviceLinkColumns + ` FROM device_links WHERE imei = $1`})
	if errors.Is(err, pgx.ErrNoRows) || errors.Is(err, store.ErrNotFound) {
		return nil, store.NotFound("")
	}
	return l, classify(err)
}

// Put implements store.DeviceLinkRecords. Its upsert goes in one
// statement with the link upserts queued next to it (pipemerge.go).
func (r deviceLinks) Put(l *store.DeviceLink) error {
	var health any
	if l.Health != nil {
		b, err := json.Marshal(l.Health)
		if err != nil {
			return fmt.Errorf("store: encode the health of device %s: %w", l.IMEI, err)
		}
		health = b
	}
	r.t.forget(tableDeviceLinks, l.IMEI)
	return r.t.queueRow(linkKind, l.IMEI, `INSERT INTO device_links (`+deviceLinkColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`+upsertLinkSet,
		l.IMEI, l.Presence, l.ConnectionID, nullTime(l.ConnectedAt), nullTime(l.DisconnectedAt), nullTime(l.LastSeen),
		l.ProtocolVersion, l.RemoteAddr, l.Firmware, l.ProductType, l.Legacy, health, l.AckedConfigVersion,
		nullTime(l.ConfigAckedAt), nullJSON(l.ReportedConfig))
}

// upsertLinkSet is what an upsert of a device_links row sets when the row
// is there.
const upsertLinkSet = ` ON CONFLICT (imei) DO UPDATE SET presence = EXCLUDED.presence, connection_id = EXCLUDED.connection_id,
	connected_at = EXCLUDED.connected_at, disconnected_at = EXCLUDED.disconnected_at,
	last_seen = EXCLUDED.last_seen, protocol_version = EXCLUDED.protocol_version,
	remote_addr = EXCLUDED.remote_addr, firmware = EXCLUDED.firmware, product_type = EXCLUDED.product_type,
	legacy = EXCLUDED.legacy, health = EXCLUDED.health, acked_config_version = EXCLUDED.acked_config_version,
	config_acked_at = EXCLUDED.config_acked_at, reported_config = EXCLUDED.reported_config`

// linkKind merges device_links upserts (Put's arguments); a row is the
// device's.
var linkKind = &mergeKind{
	sql: `INSERT INTO device_links (` + deviceLinkColumns + `)
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::timestamptz[],
		$7::integer[], $8::text[], $9::text[], $10::text[], $11::boolean[], $12::jsonb[], $13::bigint[],
		$14::timestamptz[], $15::json[])` + upsertLinkSet,
	args: func(all []mergeable) []any {
		return []any{column[string](all, 0), column[string](all, 1), column[string](all, 2),
			column[pgtype.Timestamptz](all, 3), column[pgtype.Timestamptz](all, 4), column[pgtype.Timestamptz](all, 5),
			column[int](all, 6), column[string](all, 7), column[string](all, 8), column[string](all, 9),
			column[bool](all, 10), jsonColumn(all, 11), column[int64](all, 12), column[pgtype.Timestamptz](all, 13),
			jsonColumn(all, 14)}
	}}

// Delete implements store.DeviceLinkRecords.
func (r deviceLinks) Delete(imei string) error {
	r.t.forget(tableDeviceLinks, imei)
	_, err := r.t.exec(`DELETE FROM device_links WHERE imei = $1`, imei)
	return err
}

// linksPerQuery is how many link states Each reads per query.
const linksPerQuery = 500

// Each implements store.DeviceLinkRecords. It reads the links a page at a
// time in IMEI order and calls visit with no query open, so that visit
// may read other records of the transaction.
func (r deviceLinks) Each(visit func(l *store.DeviceLink) error) error {
	after, op := "", ">="
	for {
		links, err := collect(r.t, func(row pgx.CollectableRow) (*store.DeviceLink, error) { return scanDeviceLink(row) },
			`SELECT `+deviceLinkColumns+` FROM device_links WHERE imei `+op+` $1 ORDER BY imei LIMIT $2`, after, linksPerQuery)
		if err != nil {
			return err
		}
		for _, l := range links {
			if err := visit(l); err != nil {
				return err
			}
		}
		if len(links) < linksPerQuery {
			return nil
		}
		after, op = links[len(links)-1].IMEI, ">"
	}
}
