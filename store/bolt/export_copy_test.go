package bolt

import "github.com/fleetcam/fleetcam/store"

// CopyBuckets are the buckets of each kind of record a copy moves.
func CopyBuckets() map[store.Kind][]string {
	out := map[store.Kind][]string{}
	for k, ck := range copyKinds {
		for _, b := range ck.buckets {
			out[k] = append(out[k], string(b))
		}
	}
	return out
}

// CopySequences are the buckets whose sequence is each store.Sequence.
func CopySequences() map[store.Sequence]string {
	out := map[store.Sequence]string{}
	for s, b := range copySequences {
		out[s] = string(b)
	}
	return out
}

// MetaBucket is the bucket of the engine's own bookkeeping, which no copy
// moves: each store records its own version.
var MetaBucket = string(bucketMeta)
