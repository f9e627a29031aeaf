package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// TestMediaRetention: each camera's purge days bound its media files'
// bytes, counted from the event's time; the events stay until the general
// purge days. ADAS calibration images, which no event references, go after
// the general purge days. Everything runs on an injected clock.
func TestMediaRetention(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		start := f.clock.Now()
		var other *Organization
		f.update(func(tx *Tx) error {
			f.org.Retention = Retention{PurgeDays: 30, PurgeDaysFrontCamera: 10, PurgeDaysRearCamera: 5, PurgeDaysAuxiliaryCameras: 20}
			if err := tx.UpdateOrganization(f.org); err != nil {
				return err
			}
			var err error
			other, err = tx.CreateOrganization(f.partner.ID, "Keeps media 60 days", nil)
			if err != nil {
				return err
			}
			other.Retention.PurgeDays = 60
			return tx.UpdateOrganization(other)
		})
		dev := f.addDevice(1, f.org, f.partner.ID)
		kept := f.addDevice(2, other, f.partner.ID)
		ref := func(d *Device, cam int, typ string, day int) MediaRef {
			return MediaRef{IMEI: d.IMEI, CameraID: cam, FileType: typ, FileID: fmt.Sprint("day-", day)}
		}
		adas := func(d *Device, day int) MediaRef {
			return MediaRef{IMEI: d.IMEI, CameraID: 1, FileType: FileADAS, FileID: fmt.Sprint("auto-", day)}
		}
		// Fifteen days, one event a day with a video of cameras 1, 2 and 50
		// (each video also names its snapshot), all uploaded; ADAS images on
		// days 0 and 12.
		for day := range 15 {
			f.clock.Set(start.AddDate(0, 0, day))
			for _, d := range []*Device{dev, kept} {
				f.update(func(tx *Tx) error {
					var files []EventFile
					for _, cam := range []int{1, 2, 50} {
						files = append(files, EventFile{CameraID: cam, FileID: fmt.Sprint("day-", day), FileType: FileVideo})
					}
					if _, err := tx.IngestEvent(d, EventInput{DeviceEventID: fmt.Sprint("e", day), Type: "deceleration",
						Time: f.clock.Now(), Files: files}); err != nil {
						return err
					}
					for _, cam := range []int{1, 2, 50} {
						r := ref(d, cam, FileVideo, day)
						if _, err := tx.CompleteUpload(MediaUpload{Ref: r, Blob: "blob/" + r.Key(), Size: 100, ContentType: "video/mp4"}); err != nil {
							return err
						}
					}
					if day == 0 || day == 12 {
						if err := tx.ExpectADASImage(adas(d, day)); err != nil {
							return err
						}
						_, err := tx.CompleteUpload(MediaUpload{Ref: adas(d, day), Blob: "blob/adas", Size: 10, ContentType: "image/jpeg"})
						return err
					}
					return nil
				})
			}
		}

		f.clock.Set(start.AddDate(0, 0, 14).Add(time.Hour))
		r := NewPurger(f.db, PurgerOptions{Batch: 3})
		res, err := r.RunOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// Front camera: days 0–4 (10 days); in-cabin: days 0–9 (5 days); a
		// video and its snapshot each. Auxiliary (20 days), events and ADAS
		// images (30 days): nothing yet.
		if res.Deleted["media"] != 2*5+2*10 || res.Deleted["events"] != 0 || res.Deleted["adasImages"] != 0 {
			t.Fatalf("deleted %v", res.Deleted)
		}
		trash := map[string]bool{}
		f.view(func(tx *Tx) error {
			for _, k := range tx.MediaTrash(0) {
				trash[k] = true
			}
			return nil
		})
		for _, tc := range []struct {
			ref    MediaRef
			purged bool
		}{
			{ref(dev, 1, FileVideo, 4), true},
			{ref(dev, 1, FileSnapshot, 4), true},
			{ref(dev, 1, FileVideo, 5), false},
			{ref(dev, 2, FileVideo, 9), true},
			{ref(dev, 2, FileVideo, 10), false},
			{ref(dev, 50, FileVideo, 0), false},
			{ref(kept, 1, FileVideo, 0), false},
			{ref(kept, 2, FileVideo, 0), false},
		} {
			f.view(func(tx *Tx) error {
				m, err := tx.MediaFile(tc.ref)
				if err != nil {
					t.Fatalf("%s: %v", tc.ref.Key(), err)
				}
				switch {
				case tc.purged && (m.State != MediaPurged || m.Blob != "" || m.Refs != 1):
					t.Errorf("%s not purged: %+v", tc.ref.Key(), m)
				case tc.purged && tc.ref.FileType == FileVideo && !trash["blob/"+tc.ref.Key()]:
					t.Errorf("%s: its blob is not in the trash", tc.ref.Key())
				case !tc.purged && tc.ref.FileType == FileVideo && (m.State != MediaUploaded || m.Blob == ""):
					t.Errorf("%s purged too early: %+v", tc.ref.Key(), m)
				}
				return nil
			})
		}
		f.view(func(tx *Tx) error {
			if _, n, _ := tx.DeviceEvents(dev.IMEI, start, f.clock.Now(), Page{}); n != 15 {
				t.Errorf("%d events left, want all 15: media retention must not delete events", n)
			}
			if imgs, _ := tx.ADASImages(dev, "", 0); len(imgs) != 2 {
				t.Errorf("%d ADAS images, want 2", len(imgs))
			}
			return nil
		})
		if again, err := r.RunOnce(context.Background()); err != nil || again.Deleted["media"] != 0 {
			t.Fatalf("second run %v %v, want nothing left to purge", again.Deleted, err)
		}

		// A new event asking for a purged file gets a fresh copy with its own age.
		f.update(func(tx *Tx) error {
			_, err := tx.IngestEvent(dev, EventInput{Type: EventVirtual, Time: f.clock.Now(), MediaRequested: true,
				Files: []EventFile{{CameraID: 1, FileID: "day-4", FileType: FileVideo}}})
			return err
		})
		f.view(func(tx *Tx) error {
			m, _ := tx.MediaFile(ref(dev, 1, FileVideo, 4))
			if m.State != MediaRequested || m.Refs != 2 || !m.RecordedAt.Equal(f.clock.Now()) {
				t.Errorf("purged file asked for again: %+v", m)
			}
			return nil
		})

		// Past the general purge days (cutoff day 5, 1am): the events of days
		// 0–5 go with their files, and so does the ADAS image of day 0; the one
		// of day 12 stays.
		f.clock.Set(start.AddDate(0, 0, 35).Add(time.Hour))
		res, err = r.RunOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Deleted["events"] != 6 || res.Deleted["adasImages"] != 1 {
			t.Fatalf("deleted %v", res.Deleted)
		}
		f.view(func(tx *Tx) error {
			if _, err := tx.MediaFile(ref(dev, 1, FileVideo, 0)); err == nil {
				t.Error("a file outlived its last event")
			}
			imgs, _ := tx.ADASImages(dev, "", 0)
			if len(imgs) != 1 || imgs[0].FileID != "auto-12" {
				t.Errorf("ADAS images left %+v, want auto-12", imgs)
			}
			// Auxiliary files of days 6–14 are past 20 days now; their events stay.
			for day := 6; day < 15; day++ {
				if m, err := tx.MediaFile(ref(dev, 50, FileVideo, day)); err != nil || m.State != MediaPurged {
					t.Errorf("auxiliary file of day %d: %+v %v", day, m, err)
				}
			}
			if m, _ := tx.MediaFile(ref(kept, 50, FileVideo, 0)); m == nil || m.State != MediaUploaded {
				t.Errorf("the other organization's file %+v", m)
			}
			if imgs, _ := tx.ADASImages(kept, "", 0); len(imgs) != 2 {
				t.Errorf("the other organization keeps %d ADAS images, want 2", len(imgs))
			}
			return nil
		})
	})
}
