-- The SD-card retention of each camera a device sets for itself
-- (store/cameraretention.go): an array of {"cameraId", "retentionMinutes"},
-- NULL while the device has none of its own and its organization's
-- deviceRetentionMinutes applies to every camera.

-- +goose Up
ALTER TABLE device_settings ADD COLUMN camera_retention jsonb
    CHECK (jsonb_typeof(camera_retention) = 'array');

-- +goose Down
ALTER TABLE device_settings DROP COLUMN camera_retention;
