package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fleetcam/fleetcam/store"
)

// What the device state record types share beside sql.go: JSON documents
// that may be absent, a missing device, batches of statements and the
// purges' resume positions.

var _ store.DeviceStateRecords = (*tx)(nil)

// nullJSON is the column value of a JSON document: NULL when empty.
func nullJSON(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return []byte(raw)
}

// rawJSON is the Go value of a nullable json column scanned into b.
func rawJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

// missingDevice maps a foreign key violation of a write for the device
// imei to store.NotFound (the device is not in the inventory), and the
// rest through classify.
func missingDevice(err error, imei string) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" {
		return store.NotFound("device %s", imei)
	}
	return classify(err)
}

// sendBatch runs the statements of b in one round trip and returns the
// first error.
func (t *tx) sendBatch(b *pgx.Batch) error {
	br := t.pg.SendBatch(t.ctx, b)
	for range b.Len() {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
	}
	return br.Close()
}

// encodePosition and decodePosition are the opaque resume positions of the
// batched purges: the key of the next record, as JSON.
func encodePosition(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("store: postgres: resume position: %w", err)
	}
	return b, nil
}

func decodePosition(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("store: purge position %q: %w (%v)", b, store.ErrInvalid, err)
	}
	return nil
}

// qualify prefixes each column of a comma-separated list with alias.
func qualify(alias, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}
