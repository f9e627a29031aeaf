package cloudapi

import (
	"net/http"
	"slices"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// TestRetentionReachesDevices checks that the organization's SD-card
// retention becomes part of its devices' desired configuration and is
// pushed to them.
func TestRetentionReachesDevices(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	e.do("PATCH", orgPath(e.org.ID, ""), e.partnerToken, map[string]any{"deviceRetentionMinutes": 2880}).want(http.StatusOK)
	_, _, pushed := e.cmd.snapshot()
	for _, imei := range e.devices[:3] {
		if !slices.Contains(pushed, imei) {
			t.Fatalf("configuration not pushed to %s: %v", imei, pushed)
		}
		e.fleetView(func(tx *store.Tx) error {
			eff, err := tx.EffectiveSettings(imei)
			if err != nil || eff.RetentionMinutes != 2880 || eff.Version < 1 {
				t.Errorf("effective settings of %s: retention %d version %d (%v)", imei, eff.RetentionMinutes, eff.Version, err)
			}
			return nil
		})
	}
	if slices.Contains(pushed, e.devices[3]) {
		t.Fatal("a device of another organization was pushed")
	}
}
