-- The virtual-event request whose clip a media file's bytes are
-- (store.MediaFile.ClipRequest): the clip of a later request for the same
-- second replaces the file, one of an earlier request is refused.

-- +goose Up
ALTER TABLE media_files ADD COLUMN clip_request bigint NOT NULL DEFAULT 0 CHECK (clip_request >= 0);

-- +goose Down
ALTER TABLE media_files DROP COLUMN clip_request;
