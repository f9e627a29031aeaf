package postgres

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"
)

// KeyFingerprint names a key by the setting that holds it and fingerprints
// it: HMAC-SHA256 of a fixed label under the key, 32 bytes, never the key.
type KeyFingerprint struct {
	Setting string
	Sum     []byte
}

// ErrKeyDiffers is the error of CheckClusterKeys when a key of this node is
// not the cluster's.
var ErrKeyDiffers = errors.New("store: a key differs from the cluster's")

// CheckClusterKeys compares the fingerprints of this node's keys with the
// ones recorded by the first node of the cluster, recording those not yet
// recorded under node's name. A key that differs is an error wrapping
// ErrKeyDiffers that names its setting and the node that recorded the
// cluster's: the node must not start, or its tokens, links and device
// credentials would not be understood by the others.
func (e *Engine) CheckClusterKeys(ctx context.Context, node string, keys []KeyFingerprint) error {
	for _, k := range keys {
		if len(k.Sum) != 32 {
			return fmt.Errorf("store: fingerprint of %s must be 32 bytes", k.Setting)
		}
		if _, err := e.pool.Exec(ctx, `INSERT INTO cluster_keys (name, fingerprint, node) VALUES ($1, $2, $3)
			ON CONFLICT (name) DO NOTHING`, k.Setting, k.Sum, node); err != nil {
			return fmt.Errorf("store: record the fingerprint of %s: %w", k.Setting, classify(err))
		}
		var (
			sum  []byte
			by   string
			when time.Time
		)
		if err := e.pool.QueryRow(ctx, `SELECT fingerprint, node, recorded_at FROM cluster_keys WHERE name = $1`,
			k.Setting).Scan(&sum, &by, &when); err != nil {
			return fmt.Errorf("store: read the fingerprint of %s: %w", k.Setting, classify(err))
		}
		if subtle.ConstantTimeCompare(sum, k.Sum) != 1 {
			return fmt.Errorf("%w: %s is not the key node %s started the cluster with on %s; every node needs the same",
				ErrKeyDiffers, k.Setting, by, when.UTC().Format(time.RFC3339))
		}
	}
	return nil
}
