// Package blob keeps media bytes (event videos and snapshots, ADAS images)
// outside the storage engine. Store is the small interface the rest of
// fleetcam uses; Dir keeps blobs as files under a directory (the data
// dir's media, the default), S3 as objects in a bucket of an S3-compatible
// object store, which the nodes of a cluster share.
package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotFound means no blob has the key.
var ErrNotFound = errors.New("blob: not found")

// Object is an open blob: readable, seekable (for HTTP range requests) and
// closable.
type Object interface {
	io.ReadSeekCloser
	// Size is the blob's length in bytes.
	Size() int64
}

// Store keeps blobs by key. Keys are slash-separated paths of letters,
// digits, '.', '_' and '-', without empty, "." or ".." segments.
type Store interface {
	// Put stores the bytes of r under key, replacing any blob with that key,
	// and returns the number of bytes stored. A failed Put leaves no blob.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)
	// Get opens the blob of key (ErrNotFound when absent).
	Get(ctx context.Context, key string) (Object, error)
	// Delete removes the blob of key; a missing blob is not an error.
	Delete(ctx context.Context, key string) error
}

// ValidKey reports whether key is a usable blob key.
func ValidKey(key string) bool {
	if key == "" || len(key) > 512 {
		return false
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		for _, c := range seg {
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
			default:
				return false
			}
		}
	}
	return true
}

// Dir is a Store on the local file system.
type Dir struct {
	root string
}

// NewDir returns a Store keeping blobs under root, creating it when missing.
func NewDir(root string) (*Dir, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("blob: create %s: %w", root, err)
	}
	return &Dir{root: root}, nil
}

func (d *Dir) path(key string) (string, error) {
	if !ValidKey(key) {
		return "", fmt.Errorf("blob: invalid key %q", key)
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put writes the blob to a temporary file, syncs it and renames it into
// place, so a reader never sees a partial blob.
func (d *Dir) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	p, err := d.path(key)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return 0, fmt.Errorf("blob: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".upload-*")
	if err != nil {
		return 0, fmt.Errorf("blob: %w", err)
	}
	tmp := f.Name()
	n, err := io.Copy(f, ctxReader{ctx, r})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("blob: put %s: %w", key, err)
	}
	return n, nil
}

// Get opens the blob's file.
func (d *Dir) Get(_ context.Context, key string) (Object, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("blob: %w", err)
	}
	return fileObject{File: f, size: st.Size()}, nil
}

// Delete removes the blob's file.
func (d *Dir) Delete(_ context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	return nil
}

// List calls fn with the key and size of every blob, directory by directory, until
// fn returns an error. Files of uploads in progress are not blobs.
func (d *Dir) List(ctx context.Context, fn func(key string, size int64) error) error {
	return filepath.WalkDir(d.root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("blob: list %s: %w", d.root, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.IsDir() || strings.HasPrefix(e.Name(), ".upload-") {
			return nil
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !ValidKey(key) {
			return nil
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("blob: list %s: %w", d.root, err)
		}
		return fn(key, info.Size())
	})
}

// String names the directory, for messages.
func (d *Dir) String() string { return "directory " + d.root }

type fileObject struct {
	*os.File
	size int64
}

func (o fileObject) Size() int64 { return o.size }

// ctxReader stops a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
