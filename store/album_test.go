package store_test

import (
	"errors"
	"testing"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func TestAlbumImageID(t *testing.T) {
	t.Parallel()
	imei := settingsIMEI(1)
	id := AlbumImageID(imei, "1706745600.a_b")
	if got, file, ok := ParseAlbumImageID(id); !ok || got != imei || file != "1706745600.a_b" {
		t.Fatalf("ParseAlbumImageID(%q) = %q %q %v", id, got, file, ok)
	}
	for _, bad := range []string{"", imei, "123.abc", imei + ".", imei + "./x"} {
		if _, _, ok := ParseAlbumImageID(bad); ok {
			t.Errorf("ParseAlbumImageID(%q) accepted", bad)
		}
	}
}

func TestAlbum(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newSettingsFixture(t, 1)
		org := f.org.ID
		img := AlbumImageID(f.imeis[0], "cab")
		album := func() (*Album, error) {
			var a *Album
			err := f.db.View(t.Context(), func(tx *Tx) (err error) { a, err = tx.OrgAlbum(org); return err })
			return a, err
		}
		if _, err := album(); !errors.Is(err, ErrNotFound) {
			t.Fatalf("album before enabling: %v", err)
		}
		err := f.db.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error { return tx.SetAlbumImageStatus(org, img, AlbumFamiliar) })
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("review in a disabled album: %v", err)
		}
		f.update(func(tx *Tx) error { return tx.SetAlbumEnabled(org, true) })
		a, err := album()
		if err != nil || a.EnabledAt.IsZero() || a.Status(img) != AlbumPendingReview {
			t.Fatalf("enabled album %+v %v", a, err)
		}
		f.update(func(tx *Tx) error { return tx.SetAlbumImageStatus(org, img, AlbumUnfamiliar) })
		f.update(func(tx *Tx) error { return tx.SetAlbumImageStatus(org, img, AlbumFamiliar) })
		// Enabling again keeps the album and its reviews.
		f.update(func(tx *Tx) error { return tx.SetAlbumEnabled(org, true) })
		if a, err := album(); err != nil || a.Status(img) != AlbumFamiliar || len(a.Statuses) != 1 {
			t.Fatalf("reviewed album %+v %v", a, err)
		}
		err = f.db.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error { return tx.SetAlbumImageStatus(org, img, AlbumPendingReview) })
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("back to pending review: %v", err)
		}
		if n := len(f.audit("organization.album.image")); n != 2 {
			t.Fatalf("%d image reviews audited, want 2", n)
		}
		// Disabling deletes the reviews for good.
		f.update(func(tx *Tx) error { return tx.SetAlbumEnabled(org, false) })
		if _, err := album(); !errors.Is(err, ErrNotFound) {
			t.Fatalf("album after disabling: %v", err)
		}
		f.update(func(tx *Tx) error { return tx.SetAlbumEnabled(org, true) })
		if a, err := album(); err != nil || a.Status(img) != AlbumPendingReview {
			t.Fatalf("album enabled again %+v %v", a, err)
		}
		if n := len(f.audit("organization.album")); n != 3 {
			t.Fatalf("%d album switches audited, want 3", n)
		}
	})
}
