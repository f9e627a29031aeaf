package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/fleetcam/fleetcam/store"
)

// itob encodes an id as an 8-byte big-endian key so keys sort numerically.
func itob(v int64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(v))
	return b
}

func btoi(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }

// compositeKey joins parts into one key: ids as 8 bytes, strings as-is with a 0 separator.
func compositeKey(parts ...any) []byte {
	var k []byte
	for i, p := range parts {
		switch v := p.(type) {
		case int64:
			k = append(k, itob(v)...)
		case string:
			if i > 0 && len(k) > 0 {
				k = append(k, 0)
			}
			k = append(k, v...)
		case []byte:
			k = append(k, v...)
		}
	}
	return k
}

// getJSON decodes the record at key of b into v; store.ErrNotFound (with
// no message of its own) when there is none.
func getJSON(b *bbolt.Bucket, key []byte, v any) error {
	raw := b.Get(key)
	if raw == nil {
		return store.NotFound("")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("store: decode %s: %w", key, err)
	}
	return nil
}

// putJSON stores v at key of b as JSON.
func putJSON(b *bbolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: encode: %w", err)
	}
	return b.Put(key, raw)
}

// replaceJSON stores v at key of b as JSON in place of the record there;
// store.ErrNotFound of what when there is none. Its arguments are made on
// every call: not for the writes of device ingest.
func replaceJSON(b *bbolt.Bucket, key []byte, v any, what string, args ...any) error {
	if b.Get(key) == nil {
		return store.NotFound(what, args...)
	}
	return putJSON(b, key, v)
}

// deleteStored deletes key of b; store.ErrNotFound of what when b has no
// such key.
func deleteStored(b *bbolt.Bucket, key []byte, what string, args ...any) error {
	if b.Get(key) == nil {
		return store.NotFound(what, args...)
	}
	return b.Delete(key)
}

// lookupJSON decodes the JSON record at key of b over a copy of init and
// returns it; store.ErrNotFound, unnamed as getJSON's, when there is none.
// Unlike getJSON it allocates nothing for a record that is not there: every
// GPS message reads the device's track and its organization's settings,
// and most devices have no track and most organizations no settings.
func lookupJSON[T any](b *bbolt.Bucket, key []byte, init T) (*T, error) {
	raw := b.Get(key)
	if raw == nil {
		return nil, store.NotFound("")
	}
	return decodeJSON(key, raw, init)
}

// listJSON decodes the JSON records of b whose keys start with prefix
// (every record of b when prefix is empty), in key order, and returns
// those keep admits (every one when keep is nil).
func listJSON[T any](b *bbolt.Bucket, prefix []byte, keep func(*T) bool) ([]T, error) {
	var out []T
	err := eachJSON(b, prefix, func(_ []byte, r *T) (bool, error) {
		if keep == nil || keep(r) {
			out = append(out, *r)
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachJSON decodes the JSON records of b whose keys start with prefix
// (every record of b when prefix is empty), in key order, and visits each
// with its key until visit returns false or an error.
func eachJSON[T any](b *bbolt.Bucket, prefix []byte, visit func(k []byte, r *T) (bool, error)) error {
	var zero T
	return walk(b, prefix, func(k, v []byte) (bool, error) {
		r, err := decodeJSON(k, v, zero)
		if err != nil {
			return false, err
		}
		return visit(k, r)
	})
}

// deletePrefix deletes every key of b that starts with prefix.
func deletePrefix(b *bbolt.Bucket, prefix []byte) error {
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// walk calls visit with each key and value of b that starts with prefix
// (every one when prefix is empty), in key order, until visit returns
// false or an error.
func walk(b *bbolt.Bucket, prefix []byte, visit func(k, v []byte) (bool, error)) error {
	return walkFrom(b, prefix, prefix, visit)
}

// walkFrom is walk from the first key of b at or after start (the first
// key of b when start is empty).
func walkFrom(b *bbolt.Bucket, start, prefix []byte, visit func(k, v []byte) (bool, error)) error {
	c := b.Cursor()
	for k, v := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if more, err := visit(k, v); err != nil || !more {
			return err
		}
	}
	return nil
}

// seekBefore moves c to the last key before seek and returns it (nil when
// there is none).
func seekBefore(c *bbolt.Cursor, seek []byte) (k, v []byte) {
	if k, _ = c.Seek(seek); k == nil {
		return c.Last()
	}
	return c.Prev()
}

// decodeJSON decodes raw, the JSON record at key, over a copy of init.
func decodeJSON[T any](key, raw []byte, init T) (*T, error) {
	v := new(T)
	*v = init
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("store: decode %s: %w", key, err)
	}
	return v, nil
}
