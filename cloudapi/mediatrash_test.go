package cloudapi

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/blob"
	"github.com/fleetcam/fleetcam/store/blob/s3test"
)

// refusingDeletes is a media store whose deletes fail while refuse is set,
// as a bucket does while it cannot be reached; everything else goes to
// the real store.
type refusingDeletes struct {
	blob.Store
	refuse atomic.Bool
}

func (r *refusingDeletes) Delete(ctx context.Context, key string) error {
	if r.refuse.Load() {
		return errors.New("blob: delete: connection refused")
	}
	return r.Store.Delete(ctx, key)
}

// TestMediaTrashKeepsFailedDeletes: the records of dropped media are
// purged at once; a blob whose delete fails stays in the media trash and
// is deleted by a later sweep, on a bucket of a real S3-compatible server.
func TestMediaTrashKeepsFailedDeletes(t *testing.T) {
	t.Parallel()
	bucket := &refusingDeletes{Store: s3test.Store(t)}
	e := newEnv(t, func(_ *configs.Config, d *Deps) { d.Blobs = bucket })
	ctx := t.Context()
	ref := store.MediaRef{IMEI: evIMEI(70), CameraID: 1, FileType: store.FileVideo, FileID: "1700000000000"}
	key := blobKey(ref)
	if _, err := bucket.Put(ctx, key, strings.NewReader("\x00\x00\x00\x18ftypisom")); err != nil {
		t.Fatal(err)
	}
	sys := store.Actor{Source: "test"}
	for _, step := range []func(tx *store.Tx) error{
		func(tx *store.Tx) error {
			_, err := tx.CompleteUpload(store.MediaUpload{Ref: ref, Blob: key, Size: 16, ContentType: "video/mp4"})
			return err
		},
		// No event claims the upload: it is dropped, its blob trashed.
		func(tx *store.Tx) error { return tx.DropUnreferencedMedia(ref) },
	} {
		if err := e.db.Update(ctx, sys, step); err != nil {
			t.Fatal(err)
		}
	}
	trash := func() []string {
		var keys []string
		e.db.View(ctx, func(tx *store.Tx) error { keys = tx.MediaTrash(10); return nil })
		return keys
	}
	if err := e.db.View(ctx, func(tx *store.Tx) error { _, err := tx.MediaFile(ref); return err }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the dropped file's record: %v", err)
	}

	bucket.refuse.Store(true)
	e.api.SweepMedia(ctx)
	if got := trash(); !slices.Equal(got, []string{key}) {
		t.Fatalf("after a failed delete the trash holds %v, want the blob's key", got)
	}
	if _, err := bucket.Get(ctx, key); err != nil {
		t.Fatalf("the blob whose delete failed: %v", err)
	}

	bucket.refuse.Store(false)
	e.api.SweepMedia(ctx)
	if got := trash(); len(got) != 0 {
		t.Fatalf("after the store came back the trash holds %v", got)
	}
	if _, err := bucket.Get(ctx, key); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("the trashed blob after the sweep: %v", err)
	}
}
