package bolt_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/bolt"
)

// Every bucket of a file is in exactly one kind of record a copy moves
// (or is the engine's own meta bucket), every kind has its buckets, and
// every sequence its bucket: a bucket added without its kind fails here.
func TestCopyCoversEveryBucket(t *testing.T) {
	f := newFixture(t)
	var inFile []string
	err := f.bolt.View(func(btx *bbolt.Tx) error {
		return btx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
			inFile = append(inFile, string(name))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	kinds := bolt.CopyBuckets()
	owner := map[string]store.Kind{}
	for k, names := range kinds {
		if !slices.Contains(store.Kinds, k) {
			t.Errorf("the engine copies %s, which is not a kind of store.Kinds", k)
		}
		for _, b := range names {
			if other, ok := owner[b]; ok {
				t.Errorf("bucket %s is in both %s and %s", b, other, k)
			}
			owner[b] = k
			if !slices.Contains(inFile, b) {
				t.Errorf("kind %s names bucket %s, which the file lacks", k, b)
			}
		}
	}
	for _, k := range store.Kinds {
		if len(kinds[k]) == 0 {
			t.Errorf("kind %s has no bucket in the engine", k)
		}
	}
	for _, b := range inFile {
		if _, ok := owner[b]; !ok && b != bolt.MetaBucket {
			t.Errorf("bucket %s is in no kind of record: a copy would leave it behind", b)
		}
	}
	seqs := bolt.CopySequences()
	for _, s := range store.Sequences {
		if _, ok := owner[seqs[s]]; !ok {
			t.Errorf("sequence %s is the sequence of %q, which is no bucket of a kind", s, seqs[s])
		}
	}
}

// CreateFile refuses a store file that holds records and leaves it as it
// was; one without records is replaced by the copy.
func TestCreateFileReplacesOnlyAnEmptyStore(t *testing.T) {
	f := newFixture(t) // a partner and an organization
	path := f.db.Path()
	if err := f.db.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	filled := false
	err = bolt.CreateFile(context.Background(), path, store.Options{}, func(*store.DB) error { filled = true; return nil })
	if !errors.Is(err, store.ErrNotEmpty) || filled {
		t.Fatalf("CreateFile over a store with records: %v (filled %v), want ErrNotEmpty before filling", err, filled)
	}
	if after, err := os.ReadFile(path); err != nil || !slices.Equal(after, before) {
		t.Fatalf("the refused store's file changed (%v)", err)
	}

	empty := filepath.Join(t.TempDir(), "empty.db")
	db, err := bolt.Open(empty, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	err = bolt.CreateFile(context.Background(), empty, store.Options{}, func(db *store.DB) error {
		return db.Update(context.Background(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
			_, err := tx.CreatePartner("Copied")
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	db = openStore(t, empty, nil)
	if err := db.View(context.Background(), func(tx *store.Tx) error {
		if n := tx.PartnerCount(); n != 1 {
			t.Errorf("the replaced store holds %d partners, want the 1 filled in", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(empty)); len(entries) != 1 {
		t.Errorf("the directory holds %v, want the store file alone", entries)
	}
}
