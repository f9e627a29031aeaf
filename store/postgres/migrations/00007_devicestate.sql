-- Device state: media files and what refers to them, auxiliary cameras,
-- billing, data usage, and what the broker keeps of each device (link
-- state, credentials, queued commands).
--
-- The key text columns that the store lists in order (IMEIs of the link
-- states, media keys, blob keys) are COLLATE "C": their order is bytewise,
-- whatever the database's locale.
--
-- What a removed device leaves: its media and data usage are history and
-- outlive it (no foreign key to devices; the store drops the data usage
-- itself when it removes the device). Its credentials, billing, auxiliary
-- cameras and queued commands cannot outlive it: the store deletes the
-- device row first and then drops them in the same transaction, so their
-- foreign keys cascade, doing at once what the store does next. Link
-- states have no foreign key: the broker records the link of whatever
-- IMEI connects, inventory or not; the store drops a removed device's.

-- +goose Up

-- Media files: the metadata of every camera file the cloud holds or
-- expects; the bytes are in the blob store under blob_key.
CREATE TABLE media_files (
    imei         text COLLATE "C" NOT NULL,
    file_type    text COLLATE "C" NOT NULL CHECK (file_type IN ('video', 'snapshot', 'adas')),
    camera_id    integer          NOT NULL,
    file_id      text COLLATE "C" NOT NULL,
    state        text             NOT NULL CHECK (state IN ('pending', 'requested', 'uploaded', 'unreachable', 'failed', 'purged')),
    -- the events that reference the file (media_event_refs lists them)
    refs         integer          NOT NULL DEFAULT 0 CHECK (refs >= 0),
    -- empty until uploaded, and again once purged
    blob_key     text             NOT NULL DEFAULT '',
    size         bigint           NOT NULL DEFAULT 0 CHECK (size >= 0),
    content_type text             NOT NULL DEFAULT '',
    attempts     integer          NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    error        text             NOT NULL DEFAULT '',
    requested_at timestamptz,
    uploaded_at  timestamptz,
    updated_at   timestamptz      NOT NULL,
    -- the time the file's age counts from (the media purge)
    recorded_at  timestamptz,
    -- the device's ownership (device_ownerships) the file was recorded for
    ownership    bigint           NOT NULL DEFAULT 0,
    -- the media service still has work on the file: to ask the device for
    -- it, to retry, or to drop it unreferenced (the store decides)
    pending      boolean          NOT NULL,
    PRIMARY KEY (imei, file_type, camera_id, file_id)
);
-- The media service's work list, in the order of the files' keys
-- (imei/fileType/camera/fileId, bytewise: camera ids as text).
CREATE INDEX media_files_pending ON media_files (imei, file_type, (camera_id::text COLLATE "C"), file_id) WHERE pending;

-- Which events reference which file. The events are partitioned by time,
-- so event_id cannot reference them; the file goes with its last event.
CREATE TABLE media_event_refs (
    imei      text COLLATE "C" NOT NULL,
    file_type text COLLATE "C" NOT NULL,
    camera_id integer          NOT NULL,
    file_id   text COLLATE "C" NOT NULL,
    event_id  bigint           NOT NULL,
    PRIMARY KEY (imei, file_type, camera_id, file_id, event_id),
    FOREIGN KEY (imei, file_type, camera_id, file_id) REFERENCES media_files ON DELETE CASCADE
);

-- The media age index: each file whose bytes the media purge has yet to
-- delete, by retention class, device and age (to the millisecond). The
-- purge walks one class device by device, oldest first. An entry is
-- written before its file and may outlive it (the purge then drops it
-- alone), so it does not reference media_files.
CREATE TABLE media_ages (
    -- f road-facing camera, r in-cabin camera, x auxiliary cameras,
    -- u files no event references (ADAS calibration images)
    class       text             NOT NULL CHECK (class IN ('f', 'r', 'x', 'u')),
    imei        text COLLATE "C" NOT NULL,
    recorded_at timestamptz      NOT NULL,
    file_type   text COLLATE "C" NOT NULL,
    camera_id   integer          NOT NULL,
    file_id     text COLLATE "C" NOT NULL,
    PRIMARY KEY (class, imei, recorded_at, file_type, camera_id, file_id)
);

-- Blob keys whose bytes are to be deleted from the blob store once the
-- transaction that dropped them has committed; the media service empties it.
CREATE TABLE media_trash (
    blob_key text COLLATE "C" PRIMARY KEY
);

-- The devices whose auxiliary cameras were ever stored, and their cameras
-- in the order they were stored. A device may have a list with no camera
-- left in it (all unpaired), which is not the same as never having had one.
CREATE TABLE aux_camera_lists (
    imei text PRIMARY KEY REFERENCES devices ON DELETE CASCADE
);

CREATE TABLE aux_cameras (
    imei          text        NOT NULL REFERENCES aux_camera_lists ON DELETE CASCADE,
    camera_id     integer     NOT NULL CHECK (camera_id >= 50),
    position      integer     NOT NULL,
    serial_number text        NOT NULL DEFAULT '',
    ssid          text        NOT NULL DEFAULT '',
    -- wired or wifi, as the device reports it
    kind          text        NOT NULL DEFAULT '',
    paired        boolean     NOT NULL DEFAULT false,
    connected     boolean     NOT NULL DEFAULT false,
    paired_at     timestamptz,
    changed_at    timestamptz,
    PRIMARY KEY (imei, camera_id),
    UNIQUE (imei, position)
);

CREATE TABLE device_billing (
    imei                      text        PRIMARY KEY REFERENCES devices ON DELETE CASCADE,
    aux_billing_status        text        NOT NULL CHECK (aux_billing_status IN ('enable', 'disable')),
    aux_billing_updated_at    timestamptz,
    -- when the data profile (the subscription) last changed
    subscription_updated_at   timestamptz,
    refurbished               boolean     NOT NULL DEFAULT false
);

-- Cellular data each device used in each of its billing periods: the
-- latest report of the period, a running total. Kept DataUsageRetentionDays.
CREATE TABLE data_usage_periods (
    imei         text COLLATE "C" NOT NULL,
    -- to the millisecond
    period_start timestamptz      NOT NULL CHECK (period_start > 'epoch'),
    bytes_up     bigint           NOT NULL CHECK (bytes_up >= 0),
    bytes_down   bigint           NOT NULL CHECK (bytes_down >= 0),
    received_at  timestamptz      NOT NULL,
    PRIMARY KEY (imei, period_start)
);

-- What the broker knows of each device's connection and health, read and
-- written on every connection and status report.
CREATE TABLE device_links (
    imei                 text COLLATE "C" PRIMARY KEY CHECK (imei <> ''),
    -- online, standby or offline (store.Presence*)
    presence             text             NOT NULL,
    -- the current connection; empty while offline
    connection_id        text             NOT NULL DEFAULT '',
    connected_at         timestamptz,
    disconnected_at      timestamptz,
    last_seen            timestamptz,
    -- the MQTT version of the last connection (4 = 3.1.1, 5)
    protocol_version     integer          NOT NULL DEFAULT 0,
    remote_addr          text             NOT NULL DEFAULT '',
    firmware             text             NOT NULL DEFAULT '',
    product_type         text             NOT NULL DEFAULT '',
    -- authenticates without a token (firmware below 3.12)
    legacy               boolean          NOT NULL DEFAULT false,
    -- the last health report (store.DeviceHealth)
    health               jsonb,
    acked_config_version bigint           NOT NULL DEFAULT 0,
    config_acked_at      timestamptz,
    -- the configuration the device reports, kept as it sent it
    reported_config      json
);

-- What authenticates each device: the SHA-256 of its current token, never
-- the token.
CREATE TABLE device_credentials (
    imei           text        PRIMARY KEY REFERENCES devices ON DELETE CASCADE,
    -- NULL while the device has no valid token (never issued, or revoked)
    token_hash     bytea       CHECK (length(token_hash) = 32),
    issued_at      timestamptz,
    -- the tokens ever issued; above 0 the device has left legacy
    -- authentication behind for good
    generation     integer     NOT NULL DEFAULT 0 CHECK (generation >= 0),
    revoked_at     timestamptz,
    -- the unix time (seconds) of the last accepted bootstrap proof
    last_bootstrap bigint      NOT NULL DEFAULT 0
);

-- Commands kept until the device answers them, each device's in the order
-- they were queued (seq). Command ids are the caller's and need not be
-- unique: a lookup by id takes the oldest.
CREATE TABLE queued_commands (
    seq        bigint      GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    imei       text        NOT NULL REFERENCES devices ON DELETE CASCADE,
    command_id text        NOT NULL CHECK (command_id <> ''),
    name       text        NOT NULL CHECK (name <> ''),
    -- sent to the device as they were queued
    args       json,
    queued_at  timestamptz NOT NULL
);
CREATE INDEX queued_commands_device ON queued_commands (imei, seq);

-- +goose Down
DROP TABLE queued_commands;
DROP TABLE device_credentials;
DROP TABLE device_links;
DROP TABLE data_usage_periods;
DROP TABLE device_billing;
DROP TABLE aux_cameras;
DROP TABLE aux_camera_lists;
DROP TABLE media_trash;
DROP TABLE media_ages;
DROP TABLE media_event_refs;
DROP TABLE media_files;
