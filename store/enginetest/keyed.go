package enginetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// keyedTests are the tests of the simple keyed record types (store.Keyed),
// one a type: each stores a record, replaces it with another of the same
// key, and deletes it.
var keyedTests = []test{
	{"Hotspots", func(t *testing.T, e store.Engine) {
		testKeyed(t, e, store.Records.Hotspots, store.KeyedHotspots, func(imei string, _ int64) []*store.HotspotState {
			return []*store.HotspotState{{IMEI: imei, On: true},
				{IMEI: imei, Password: "Abcdefghij0123456789", PasswordChangedAt: testTime}}
		})
	}},
	{"DeviceSettings", func(t *testing.T, e store.Engine) {
		testKeyed(t, e, store.Records.DeviceSettings, store.KeyedDeviceSettings, func(imei string, _ int64) []*store.DeviceSettings {
			return []*store.DeviceSettings{
				// A part of no value of its own is kept apart from none.
				{IMEI: imei, Version: 1, Device: &store.DeviceConfig{}, Control: &store.DeviceControl{Mode: "demo"},
					UpdatedAt: testTime},
				{IMEI: imei, Version: 2, Events: &store.EventConfig{VehicleType: "Van"}, PrivacyMode: "on",
					Geofences:              []store.Geofence{{ID: 1, Name: "Depot", Lat: 52.5, Lon: 4.25, Radius: 100}},
					CameraRetention:        []store.CameraRetention{{CameraID: 1, RetentionMinutes: 60}},
					NotificationRecipients: map[string][]string{"harshBraking": {"a@example.com"}}, UpdatedAt: testTime.Add(time.Hour)},
			}
		})
	}},
	{"OrganizationSettings", func(t *testing.T, e store.Engine) {
		testKeyed(t, e, store.Records.OrganizationSettings, store.KeyedOrgSettings, func(_ string, org int64) []*store.OrgSettings {
			return []*store.OrgSettings{{OrganizationID: org, ForbidLegacyFirmware: true},
				{OrganizationID: org, Privacy: &store.PrivacyConfig{}, UpdatedAt: testTime}}
		})
	}},
	{"Albums", func(t *testing.T, e store.Engine) {
		testKeyed(t, e, store.Records.Albums, store.KeyedAlbums, func(_ string, org int64) []*store.Album {
			return []*store.Album{{OrganizationID: org, EnabledAt: testTime},
				{OrganizationID: org, EnabledAt: testTime, Statuses: map[string]string{"a.1": store.AlbumFamiliar}}}
		})
	}},
	{"HealthStates", func(t *testing.T, e store.Engine) {
		testKeyed(t, e, store.Records.DeviceHealthStates, store.KeyedHealthStates, func(imei string, _ int64) []*store.HealthState {
			return []*store.HealthState{{IMEI: imei, RecordingTest: "failed", ReportedAt: testTime},
				{IMEI: imei, AdasCalibrated: true, ReportedAt: testTime.Add(time.Minute)}}
		})
	}},
	{"DeviceBillings", func(t *testing.T, e store.Engine) {
		testKeyed(t, e, store.Records.DeviceBillings, store.KeyedDeviceBillings, func(imei string, _ int64) []*store.DeviceBilling {
			return []*store.DeviceBilling{{IMEI: imei, AuxBillingStatus: store.AuxBillingDisable, SubscriptionUpdatedAt: testTime},
				{IMEI: imei, AuxBillingStatus: store.AuxBillingEnable, AuxBillingUpdatedAt: testTime.Add(time.Hour),
					Refurbished: true, RefurbishedAt: testTime}}
		})
	}},
	{"DeviceCredentials", func(t *testing.T, e store.Engine) {
		hash := make([]byte, 32)
		hash[0], hash[31] = 1, 0xff
		testKeyed(t, e, store.Records.DeviceCredentials, store.KeyedDeviceCredentials, func(imei string, _ int64) []*store.DeviceCredential {
			return []*store.DeviceCredential{
				{IMEI: imei, TokenHash: hash, IssuedAt: testTime, Generation: 2, LastBootstrap: testTime.Unix()},
				{IMEI: imei, IssuedAt: testTime, Generation: 2, RevokedAt: testTime.Add(time.Hour), LastBootstrap: testTime.Unix()}}
		})
	}},
	{"WebhookSettings", func(t *testing.T, e store.Engine) {
		testKeyed(t, e, store.Records.WebhookSettings, store.KeyedWebhookSettings, func(_ string, org int64) []*store.WebhookSettings {
			return []*store.WebhookSettings{{OrganizationID: org, GPSURLs: []string{"https://a.example/gps"}},
				{OrganizationID: org, NotifyMediaAvailable: true, AllowInsecureURLs: true, UpdatedAt: testTime,
					SystemMessages: []store.SystemMessagesWebhook{{URL: "https://a.example/system"}}}}
		})
	}},
	{"WebhookSecrets", func(t *testing.T, e store.Engine) {
		testKeyed(t, e, store.Records.WebhookSecrets, store.KeyedWebhookSecrets, func(_ string, org int64) []*store.WebhookSecret {
			return []*store.WebhookSecret{{OrganizationID: org, Salt: []byte{1, 2, 3}, CreatedAt: testTime},
				{OrganizationID: org, Salt: []byte{4, 5}, PreviousSalt: []byte{1, 2, 3}, PreviousUntil: testTime.Add(time.Hour),
					CreatedAt: testTime, RotatedAt: testTime}}
		})
	}},
}

// testKeyed stores each record records gives for a device and its
// organization, all of one key, over the one before, and reads each back
// as it was stored; then deletes it. The zero key, never stored, is
// ErrNotFound, and deleting it is no error.
func testKeyed[K store.Key, T any](t *testing.T, e store.Engine, set func(store.Records) store.KeyedRecords[K, T],
	decl *store.Keyed[K, T], records func(imei string, org int64) []*T) {
	d := seedDirectory(t, e)
	imei := testIMEI(1)
	seeder{t, e, testTime}.device(store.Device{IMEI: imei, OrganizationID: d.org.ID, PartnerID: d.p.ID, Ownership: 1})
	get := func(k K) (*T, error) {
		t.Helper()
		var got *T
		err := e.View(t.Context(), func(r store.Records) (err error) { got, err = set(r).Get(k); return err })
		return got, err
	}
	var none K
	_, err := get(none)
	wantErr(t, "Get of a key never stored", err, store.ErrNotFound)
	var k K
	for i, want := range records(imei, d.org.ID) {
		k = decl.Key(want)
		write(t, e, func(r store.Records) error { return set(r).Put(want) })
		got, err := get(k)
		wantErr(t, fmt.Sprintf("Get of record %d", i), err, nil)
		wantEqual(t, fmt.Sprintf("Get of record %d", i), got, want)
	}
	write(t, e, func(r store.Records) error {
		if err := set(r).Delete(k); err != nil {
			return err
		}
		return set(r).Delete(none)
	})
	_, err = get(k)
	wantErr(t, "Get after Delete", err, store.ErrNotFound)
}
