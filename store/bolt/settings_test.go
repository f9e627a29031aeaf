package bolt_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/bolt"
)

// orgKey is the org_settings key of an organization: its id big-endian.
func orgKey(id int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(id)) }

// Device settings, organization settings and hotspot states an older
// version wrote are read as they were, and written back under the same keys.
func TestSettingsWrittenBefore(t *testing.T) {
	f := newDeviceFixture(t)
	const password = "Abcdefghij0123456789"
	f.put(bolt.BucketDeviceSettings, []byte(fixtureIMEI), fmt.Appendf(nil,
		`{"imei":%q,"version":4,"events":{"vehicleType":"Van","speedLimitKmh":80},"privacyMode":"on",`+
			`"geofences":[{"id":1,"name":"Depot","lat":52,"lon":4,"radius":100}],"updatedAt":"2026-03-01T00:00:00Z"}`, fixtureIMEI))
	f.put(bolt.BucketOrgSettings, orgKey(f.org.ID), fmt.Appendf(nil,
		`{"organizationId":%d,"device":{"brightness":200,"hotspotEnabled":true},"updatedAt":"2026-03-01T00:00:00Z"}`, f.org.ID))
	f.put(bolt.BucketHotspot, []byte(fixtureIMEI), fmt.Appendf(nil, `{"imei":%q,"on":true,"password":%q}`, fixtureIMEI, password))
	f.view(func(tx *store.Tx) error {
		e, err := tx.EffectiveSettings(fixtureIMEI)
		if err != nil {
			return err
		}
		if e.Version != 4 || e.Events.VehicleType != "Van" || e.Events.SpeedLimitKmh != 80 || e.PrivacyMode != "on" ||
			len(e.Geofences) != 1 || e.Geofences[0].Name != "Depot" || e.Device.Brightness != 200 ||
			!e.Device.HotspotEnabled || e.HotspotPassword != password {
			t.Errorf("effective settings %+v", e)
		}
		return nil
	})

	// A new organization default bumps the device's version; the hotspot,
	// on before and on still, keeps its password.
	f.update(func(tx *store.Tx) error {
		os, err := tx.OrgSettings(f.org.ID)
		if err != nil {
			return err
		}
		os.Device.Brightness = 100
		return tx.PutOrgSettings(os, "test.settings")
	})
	var org store.OrgSettings
	var dev store.DeviceSettings
	var hot store.HotspotState
	for _, r := range []struct {
		bucket string
		key    []byte
		v      any
	}{
		{bolt.BucketOrgSettings, orgKey(f.org.ID), &org},
		{bolt.BucketDeviceSettings, []byte(fixtureIMEI), &dev},
		{bolt.BucketHotspot, []byte(fixtureIMEI), &hot},
	} {
		if err := json.Unmarshal(f.get(r.bucket, r.key), r.v); err != nil {
			t.Fatalf("%s: %v", r.bucket, err)
		}
	}
	if org.OrganizationID != f.org.ID || org.Device == nil || org.Device.Brightness != 100 || !org.Device.HotspotEnabled {
		t.Errorf("stored organization settings %+v", org)
	}
	if dev.IMEI != fixtureIMEI || dev.Version != 5 || dev.Events == nil || dev.Events.SpeedLimitKmh != 80 {
		t.Errorf("stored device settings %+v", dev)
	}
	if !hot.On || hot.Password != password {
		t.Errorf("stored hotspot %+v", hot)
	}

	// A factory reset forgets the password: the default is stored as none.
	f.update(func(tx *store.Tx) error { return tx.ResetHotspot(fixtureIMEI) })
	var reset map[string]any
	if err := json.Unmarshal(f.get(bolt.BucketHotspot, []byte(fixtureIMEI)), &reset); err != nil {
		t.Fatal(err)
	}
	if _, has := reset["password"]; has || reset["on"] != true || reset["imei"] != fixtureIMEI {
		t.Errorf("stored hotspot after a factory reset %v", reset)
	}
}
