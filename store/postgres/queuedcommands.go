package postgres

import (
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// queuedCommands are the queued_commands rows: each device's queue is its
// rows in seq order, seq an identity, so a command queued later comes
// after.
type queuedCommands struct{ t *tx }

// QueuedCommands implements store.DeviceStateRecords.
func (t *tx) QueuedCommands() store.QueuedCommandRecords { return queuedCommands{t} }

// queuedCommandColumns are the columns scanQueuedCommand reads.
const queuedCommandColumns = `command_id, imei, name, args, queued_at`

func scanQueuedCommand(row pgx.Row) (store.QueuedCommand, error) {
	var c store.QueuedCommand
	var args []byte
	err := row.Scan(&c.ID, &c.IMEI, &c.Name, &args, &c.QueuedAt)
	c.Args, c.QueuedAt = rawJSON(args), c.QueuedAt.UTC()
	return c, err
}

// Add implements store.QueuedCommandRecords; store.ErrNotFound when the
// device is not in the inventory.
func (r queuedCommands) Add(c *store.QueuedCommand) error {
	delete(r.t.memo.queued, c.IMEI)
	_, err := r.t.pg.Exec(r.t.ctx, `INSERT INTO queued_commands (`+queuedCommandColumns+`) VALUES ($1, $2, $3, $4, $5)`,
		c.ID, c.IMEI, c.Name, nullJSON(c.Args), c.QueuedAt.UTC())
	return missingDevice(err, c.IMEI)
}

// List implements store.QueuedCommandRecords.
func (r queuedCommands) List(imei string) ([]store.QueuedCommand, error) {
	if cmds, ok := r.t.memo.queued[imei]; ok {
		return slices.Clone(cmds), nil
	}
	return collect(r.t, func(row pgx.CollectableRow) (store.QueuedCommand, error) { return scanQueuedCommand(row) },
		`SELECT `+queuedCommandColumns+` FROM queued_commands WHERE imei = $1 ORDER BY seq`, imei)
}

// Get implements store.QueuedCommandRecords.
func (r queuedCommands) Get(imei, id string) (*store.QueuedCommand, error) {
	c, err := scanQueuedCommand(r.t.pg.QueryRow(r.t.ctx, `SELECT `+queuedCommandColumns+` FROM queued_commands
		WHERE imei = $1 AND command_id = $2 ORDER BY seq LIMIT 1`, imei, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.NotFound("queued command %s of device %s", id, imei)
	}
	if err != nil {
		return nil, classify(err)
	}
	return &c, nil
}

// Delete implements store.QueuedCommandRecords.
func (r queuedCommands) Delete(imei, id string) (bool, error) {
	delete(r.t.memo.queued, imei)
	tag, err := r.t.exec(`DELETE FROM queued_commands WHERE seq = (SELECT seq FROM queued_commands
		WHERE imei = $1 AND command_id = $2 ORDER BY seq LIMIT 1)`, imei, id)
	return tag.RowsAffected() > 0, err
}
