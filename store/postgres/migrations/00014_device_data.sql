-- Device data (cloudapi/retentionconfig.go, cloudapi/album.go).
--
-- The SD-card retention of each camera a device sets for itself
-- (store/cameraretention.go): an array of {"cameraId", "retentionMinutes"},
-- NULL while the device has none of its own and its organization's
-- deviceRetentionMinutes applies to every camera.
--
-- The organizations' albums (store/album.go): one row per organization
-- whose album is enabled, since enabled_at, with the review status of each
-- reviewed image by image id (an image not in statuses is pending review).
-- Disabling the album deletes its row.

-- +goose Up
ALTER TABLE device_settings ADD COLUMN camera_retention jsonb
    CHECK (jsonb_typeof(camera_retention) = 'array');

CREATE TABLE organization_albums (
    organization_id bigint      PRIMARY KEY REFERENCES organizations ON DELETE CASCADE,
    enabled_at      timestamptz NOT NULL,
    statuses        jsonb       NOT NULL CHECK (jsonb_typeof(statuses) = 'object')
);

-- +goose Down
DROP TABLE organization_albums;
ALTER TABLE device_settings DROP COLUMN camera_retention;
