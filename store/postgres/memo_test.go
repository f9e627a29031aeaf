package postgres

import (
	"reflect"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// TestMemo reads an organization's settings and webhook types twice in one
// transaction around writes of them: each read after a write sees it, and
// what a reader changes in the settings it was given is not what the next
// reader gets.
func TestMemo(t *testing.T) {
	e := trackEngine(t)
	f := seedTracks(t, e)
	ds := fullDeviceSettings("")
	s := &store.OrgSettings{OrganizationID: f.orgA, Device: ds.Device, Events: ds.Events, UpdatedAt: trackNow}
	write(t, e, func(r *tx) error {
		if err := r.OrganizationSettings().Put(s); err != nil {
			return err
		}
		got, err := r.OrganizationSettings().Get(f.orgA)
		if err != nil {
			return err
		}
		got.ForbidLegacyFirmware = true
		got.Events = nil
		again, err := r.OrganizationSettings().Get(f.orgA)
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Errorf("settings read again after a reader changed its copy: %+v, %v; want %+v", again, err, s)
		}
		for _, want := range []bool{false, true, false} {
			has, err := r.WebhookReceivers().Has(f.orgA, store.WebhookTypeGPS)
			if err != nil || has != want {
				t.Errorf("receives GPS: %v, %v; want %v", has, err, want)
			}
			types := []string{store.WebhookTypeGPS}
			if want {
				types = nil
			}
			if err := r.WebhookReceivers().Put(f.orgA, types); err != nil {
				return err
			}
		}
		return nil
	})
}
