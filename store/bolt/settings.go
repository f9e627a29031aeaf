package bolt

import "github.com/fleetcam/fleetcam/store"

// deviceSettings are the device settings, JSON under the device's IMEI.
type deviceSettings struct{ t *tx }

// DeviceSettings implements store.TrackRecords.
func (t *tx) DeviceSettings() store.DeviceSettingsRecords { return deviceSettings{t} }

// Get implements store.DeviceSettingsRecords. A record that does not name
// its device is of the IMEI it is stored under.
func (r deviceSettings) Get(imei string) (*store.DeviceSettings, error) {
	return lookupJSON(r.t.bucket(bucketDeviceSettings), []byte(imei), store.DeviceSettings{IMEI: imei})
}

// Put implements store.DeviceSettingsRecords.
func (r deviceSettings) Put(s *store.DeviceSettings) error {
	return putJSON(r.t.bucket(bucketDeviceSettings), []byte(s.IMEI), s)
}

// Delete implements store.DeviceSettingsRecords.
func (r deviceSettings) Delete(imei string) error {
	return r.t.bucket(bucketDeviceSettings).Delete([]byte(imei))
}

// organizationSettings are the organizations' default settings, JSON under
// the organization id (8 bytes big-endian).
type organizationSettings struct{ t *tx }

// OrganizationSettings implements store.TrackRecords.
func (t *tx) OrganizationSettings() store.OrganizationSettingsRecords {
	return organizationSettings{t}
}

// Get implements store.OrganizationSettingsRecords. A record that does not
// name its organization is of the id it is stored under.
func (r organizationSettings) Get(orgID int64) (*store.OrgSettings, error) {
	return lookupJSON(r.t.bucket(bucketOrgSettings), itob(orgID), store.OrgSettings{OrganizationID: orgID})
}

// Put implements store.OrganizationSettingsRecords.
func (r organizationSettings) Put(s *store.OrgSettings) error {
	return putJSON(r.t.bucket(bucketOrgSettings), itob(s.OrganizationID), s)
}
