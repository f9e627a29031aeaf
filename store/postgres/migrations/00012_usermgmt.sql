-- User and organization management: each user's regional settings for the
-- portal, the generation of its API tokens (a password change or reset
-- moves the generation on, and a token of an older generation is refused,
-- which ends the user's other sessions) and the organizations it was added
-- to as an external user, and when an organization was deleted.

-- +goose Up
ALTER TABLE users
    -- store.UserSettings: 0 is not set; measurement 1 imperial, 2 metric;
    -- time format 1 24 hours, 2 am/pm
    ADD COLUMN measurement      smallint NOT NULL DEFAULT 0 CHECK (measurement BETWEEN 0 AND 2),
    ADD COLUMN time_format      smallint NOT NULL DEFAULT 0 CHECK (time_format BETWEEN 0 AND 2),
    ADD COLUMN token_generation bigint   NOT NULL DEFAULT 0 CHECK (token_generation >= 0),
    -- the other organizations the user was added to as an external user,
    -- in the order added (an organization deleted since leaves them); NULL
    -- for none
    ADD COLUMN external_organization_ids bigint[];

-- A deleted organization keeps its row, which the audit log and the records
-- of its former devices refer to until the retention purge has removed
-- them; nothing else finds it. NULL while it exists.
ALTER TABLE organizations ADD COLUMN deleted_at timestamptz;

-- +goose Down
ALTER TABLE organizations DROP COLUMN deleted_at;
ALTER TABLE users
    DROP COLUMN measurement,
    DROP COLUMN time_format,
    DROP COLUMN token_generation,
    DROP COLUMN external_organization_ids;
