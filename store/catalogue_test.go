package store_test

import (
	"testing"

	. "github.com/fleetcam/fleetcam/store"
)

func TestEventCatalogue(t *testing.T) {
	t.Parallel()
	kinds := EventKinds()
	if len(kinds) != 40 {
		t.Fatalf("%d event kinds, want the 40 fleetcam knows", len(kinds))
	}
	api, hook := map[string]bool{}, map[string]bool{}
	for _, k := range kinds {
		if k.API == "" || k.Webhook == "" || k.Name == "" {
			t.Errorf("incomplete kind %+v", k)
		}
		if api[k.API] || hook[k.Webhook] {
			t.Errorf("duplicate name in %+v", k)
		}
		api[k.API], hook[k.Webhook] = true, true
		if k.Beep && k.HasMedia {
			t.Errorf("%s: a beep carries no media", k.API)
		}
		if got, ok := LookupEvent(k.API); !ok || got.API != k.API {
			t.Errorf("LookupEvent(%s) = %+v, %v", k.API, got, ok)
		}
	}
	tests := []struct {
		name, lookup, api, webhook string
		media, beep, mvai          bool
	}{
		{"text only power on", "accOn", "accOn", "acc_on", false, false, false},
		{"text only power off", "accOff", "accOff", "acc_off", false, false, false},
		{"beep", "cellPhoneUseBeep", "cellPhoneUseBeep", "cell_phone_use_beep", false, true, false},
		{"MV+AI", "smoking", "smoking", "smoking", true, false, true},
		{"de-acceleration spelling", "deceleration", "deceleration", "de_acceleration", true, false, false},
		{"alias of the right turn", "sharpTurnRight", "sharpRightTurn", "sharp_turn_right", true, false, false},
		{"alias of accident", "possibleAccident", "accident", "accident", true, false, false},
		{"geofence webhook spelling", "geoFence", "geoFence", "GeoFence", true, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, ok := LookupEvent(tc.lookup)
			if !ok || k.API != tc.api || k.Webhook != tc.webhook || k.HasMedia != tc.media || k.Beep != tc.beep || k.MVAI != tc.mvai {
				t.Fatalf("LookupEvent(%s) = %+v, %v", tc.lookup, k, ok)
			}
		})
	}
	if _, ok := LookupEvent("sharp_turn_right"); ok {
		t.Error("webhook syntax accepted as API syntax")
	}
	if _, ok := LookupEvent("nonsense"); ok {
		t.Error("unknown name accepted")
	}
	kinds[0].API = "changed"
	if k, _ := LookupEvent("acceleration"); k.API != "acceleration" {
		t.Error("EventKinds exposes the table")
	}
	if DataNone != (EventKind{}).DefaultDataType() || DataVideo != kinds[1].DefaultDataType() {
		t.Error("default data types")
	}
}
