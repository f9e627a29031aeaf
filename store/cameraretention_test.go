package store_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func TestCameraRetention(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newSettingsFixture(t, 1)
		imei := f.imeis[0]
		f.update(func(tx *Tx) error {
			o, err := tx.Organization(f.org.ID)
			if err != nil {
				return err
			}
			o.Retention.DeviceRetentionMinutes = 600
			return tx.UpdateOrganization(o)
		})
		before := f.effective(imei).Version
		f.update(func(tx *Tx) error {
			return tx.SetCameraRetention(imei, []CameraRetention{{CameraID: 2, RetentionMinutes: 30}, {CameraID: 1, RetentionMinutes: 120}})
		})
		e := f.effective(imei)
		want := []CameraRetention{{CameraID: 1, RetentionMinutes: 120}, {CameraID: 2, RetentionMinutes: 30}}
		if !slices.Equal(e.CameraRetention, want) || e.Version != before+1 {
			t.Fatalf("stored retention %+v at version %d (was %d)", e.CameraRetention, e.Version, before)
		}
		if got := e.CameraRetentionMinutes([]int{1, 2, 50}); !slices.Equal(got, append(want, CameraRetention{CameraID: 50, RetentionMinutes: 600})) {
			t.Fatalf("per camera %+v", got)
		}
		if n := len(f.audit("device.retentionConfig")); n != 1 {
			t.Fatalf("%d audit entries", n)
		}

		bad := []struct {
			list  []CameraRetention
			field string
		}{
			{[]CameraRetention{{CameraID: 3, RetentionMinutes: 30}}, "config[0].cameraId"},
			{[]CameraRetention{{CameraID: 1, RetentionMinutes: 30}, {CameraID: 1, RetentionMinutes: 40}}, "config[1].cameraId"},
			{[]CameraRetention{{CameraID: 2, RetentionMinutes: 3}}, "config[0].retentionMinutes"},
			{[]CameraRetention{{CameraID: 50, RetentionMinutes: 30}}, "config[0].cameraId"},
		}
		for _, b := range bad {
			err := f.db.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error { return tx.SetCameraRetention(imei, b.list) })
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), b.field) {
				t.Fatalf("%+v: %v, want ErrInvalid naming %s", b.list, err, b.field)
			}
		}
		// A paired auxiliary camera may have its own; an empty list falls back to the organization's.
		f.update(func(tx *Tx) error {
			d, err := tx.Device(imei)
			if err != nil {
				return err
			}
			if err := tx.RecordAuxPairing(d, []AuxCamera{{CameraID: 50}}); err != nil {
				return err
			}
			return tx.SetCameraRetention(imei, []CameraRetention{{CameraID: 50, RetentionMinutes: 15}})
		})
		if got := f.effective(imei).CameraRetentionMinutes([]int{1, 50}); !slices.Equal(got, []CameraRetention{{1, 600}, {50, 15}}) {
			t.Fatalf("after replacing: %+v", got)
		}
		f.update(func(tx *Tx) error { return tx.SetCameraRetention(imei, nil) })
		if e := f.effective(imei); e.CameraRetention != nil || len(f.audit("device.retentionConfig")) != 3 {
			t.Fatalf("cleared retention %+v", e.CameraRetention)
		}
	})
}
