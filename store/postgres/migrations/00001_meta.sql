-- fleetcam's own bookkeeping: the version of the last store migration
-- (store/migrations.go) applied to the records, as opposed to this schema's
-- version, which goose keeps in fleetcam_schema_migrations.

-- +goose Up
CREATE TABLE fleetcam_meta (
    id            smallint PRIMARY KEY CHECK (id = 1),
    store_version integer  NOT NULL
);

-- +goose Down
DROP TABLE fleetcam_meta;
