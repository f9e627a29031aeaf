-- OAuth clients (POST /oauth/clients/{entityType}/{entityId}): the
-- machine-to-machine clients of a partner, or of one organization its
-- partner created, which get API tokens with their secret. Only the
-- SHA-256 of the secret is kept; secret_generation grows with each
-- rotation, and tokens carry it so a rotation ends them.

-- +goose Up
CREATE TABLE oauth_clients (
    id                text        PRIMARY KEY,
    name              text        NOT NULL DEFAULT '',
    partner_id        bigint      NOT NULL REFERENCES partners,
    -- NULL for a partner's own client
    organization_id   bigint      REFERENCES organizations,
    enabled           boolean     NOT NULL,
    secret_hash       bytea       NOT NULL CHECK (length(secret_hash) = 32),
    secret_generation bigint      NOT NULL,
    created_at        timestamptz NOT NULL,
    refreshed_at      timestamptz NOT NULL
);
CREATE INDEX oauth_clients_partner ON oauth_clients (partner_id, id);
CREATE INDEX oauth_clients_organization ON oauth_clients (organization_id, id) WHERE organization_id IS NOT NULL;

-- +goose Down
DROP TABLE oauth_clients;
