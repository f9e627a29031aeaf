package bolt

import (
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/fleetcam/fleetcam/store"
)

// tx is one bbolt transaction as the store's records. The methods of each
// record group are in the file named after the group.
type tx struct {
	b *bbolt.Tx
}

var _ store.Records = (*tx)(nil)

// OnCommit implements store.Records.
func (t *tx) OnCommit(fn func()) { t.b.OnCommit(fn) }

// keySchemaVersion in the meta bucket is the version of the last store
// migration applied, 8 bytes big-endian; a file without it has had none
// recorded (new, or written before migrations were versioned).
var keySchemaVersion = []byte("schema_version")

// SchemaVersion implements store.Records.
func (t *tx) SchemaVersion() (int, error) {
	meta := t.b.Bucket(bucketMeta)
	if meta == nil {
		return 0, nil // a new file, before Prepare
	}
	v := meta.Get(keySchemaVersion)
	switch {
	case v == nil:
		return 0, nil
	case len(v) != 8:
		return 0, fmt.Errorf("store: meta %s is %d bytes, not 8", keySchemaVersion, len(v))
	}
	return int(btoi(v)), nil
}

// SetSchemaVersion implements store.Records.
func (t *tx) SetSchemaVersion(v int) error {
	return t.bucket(bucketMeta).Put(keySchemaVersion, itob(int64(v)))
}

// bucket opens the bucket name, which OpenEngine created. Pages of append
// buckets are left appendFill full when they split.
func (t *tx) bucket(name []byte) *bbolt.Bucket {
	b := t.b.Bucket(name)
	if appendBuckets[string(name)] {
		b.FillPercent = appendFill
	}
	return b
}

// nextID returns the next integer id of a bucket's sequence.
func (t *tx) nextID(name []byte) (int64, error) {
	seq, err := t.bucket(name).NextSequence()
	return int64(seq), err
}

// drawID sets *id, the id of a new record, to the next of bucket name's
// sequence.
func (t *tx) drawID(name []byte, id *int64) error {
	next, err := t.nextID(name)
	if err == nil {
		*id = next
	}
	return err
}
