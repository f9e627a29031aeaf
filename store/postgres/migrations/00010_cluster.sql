-- Cluster mode (docs/cluster.md): the fingerprints of the keys every node
-- of a cluster must share. The first node to start records them; a node
-- whose keys give other fingerprints refuses to start. A fingerprint is
-- HMAC-SHA256 of a fixed label under the key: it tells keys apart without
-- revealing them.

-- +goose Up
CREATE TABLE cluster_keys (
    name        text        PRIMARY KEY,
    fingerprint bytea       NOT NULL CHECK (length(fingerprint) = 32),
    node        text        NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE cluster_keys;
