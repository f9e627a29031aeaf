-- When a device was last marked refurbished (it came back through a
-- return, RMA): GET /v2/devices/rma-devices reports and filters by it.
-- Devices marked before this migration keep no time.

-- +goose Up
ALTER TABLE device_billing ADD COLUMN refurbished_at timestamptz;

-- +goose Down
ALTER TABLE device_billing DROP COLUMN refurbished_at;
