package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// Settings are documents the API reads and writes whole: each part of a
// device's or an organization's settings (device, events, privacy, privacy
// mode, geofences) is a jsonb column, NULL when the record has none of its
// own; the version, the privacy mode and the time of the last change are
// typed columns.

// part is one part of a settings record, which absent says it lacks.
type part struct {
	v      any
	absent bool
}

// documents are the parts of a settings record as jsonb parameters: NULL
// for an absent part.
func documents(parts ...part) ([]any, error) {
	out := make([]any, len(parts))
	for i, p := range parts {
		if p.absent {
			continue
		}
		doc, err := json.Marshal(p.v)
		if err != nil {
			return nil, fmt.Errorf("store: encode settings: %w", err)
		}
		out[i] = string(doc)
	}
	return out, nil
}

// decodeDocuments decodes each jsonb column raw[i] read (nil for NULL)
// into the part of a settings record into[i] points at.
func decodeDocuments(what string, raw []*[]byte, into []any) error {
	for i, r := range raw {
		if *r == nil {
			continue
		}
		if err := json.Unmarshal(*r, into[i]); err != nil {
			return fmt.Errorf("store: decode the settings of %s: %w", what, err)
		}
	}
	return nil
}

// deviceSettings are the device settings: table device_settings, one row
// per device, which goes with the device.
type deviceSettings struct{ t *tx }

// DeviceSettings implements store.TrackRecords.
func (t *tx) DeviceSettings() store.DeviceSettingsRecords { return deviceSettings{t} }

// deviceSettingsColumns are the columns Get reads.
const deviceSettingsColumns = `version, device, events, privacy, privacy_mode, privacy_mode_config, geofences, control,
	camera_retention, notification_recipients, updated_at`

// Get implements store.DeviceSettingsRecords.
func (r deviceSettings) Get(imei string) (*store.DeviceSettings, error) {
	s := store.DeviceSettings{IMEI: imei}
	var device, events, privacy, modeConfig, geofences, control, retention, recipients []byte
	var mode pgtype.Text
	err := getMemo(r.t, tableDeviceSettings, imei, `SELECT `+deviceSettingsColumns+` FROM device_settings WHERE imei = $1`,
		[]any{&s.Version, &device, &events, &privacy, &mode, &modeConfig, &geofences, &control, &retention, &recipients,
			zeroTime{&s.UpdatedAt}}, imei)
	if err != nil {
		return nil, err
	}
	s.PrivacyMode = mode.String
	err = decodeDocuments("device "+imei, []*[]byte{&device, &events, &privacy, &modeConfig, &geofences, &control, &retention, &recipients},
		[]any{&s.Device, &s.Events, &s.Privacy, &s.PrivacyModeConfig, &s.Geofences, &s.Control, &s.CameraRetention,
			&s.NotificationRecipients})
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// Put implements store.DeviceSettingsRecords.
func (r deviceSettings) Put(s *store.DeviceSettings) error {
	docs, err := documents(part{s.Device, s.Device == nil}, part{s.Events, s.Events == nil},
		part{s.Privacy, s.Privacy == nil}, part{s.PrivacyModeConfig, s.PrivacyModeConfig == nil},
		part{s.Geofences, len(s.Geofences) == 0}, part{s.Control, s.Control == nil},
		part{s.CameraRetention, len(s.CameraRetention) == 0},
		part{s.NotificationRecipients, len(s.NotificationRecipients) == 0})
	if err != nil {
		return err
	}
	r.t.forget(tableDeviceSettings, s.IMEI)
	_, err = r.t.exec(`INSERT INTO device_settings (imei, version, privacy_mode, updated_at,
			device, events, privacy, privacy_mode_config, geofences, control, camera_retention, notification_recipients)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (imei) DO UPDATE SET version = EXCLUDED.version, privacy_mode = EXCLUDED.privacy_mode,
			updated_at = EXCLUDED.updated_at, device = EXCLUDED.device, events = EXCLUDED.events,
			privacy = EXCLUDED.privacy, privacy_mode_config = EXCLUDED.privacy_mode_config,
			geofences = EXCLUDED.geofences, control = EXCLUDED.control, camera_retention = EXCLUDED.camera_retention,
			notification_recipients = EXCLUDED.notification_recipients`,
		append([]any{s.IMEI, s.Version, pgtype.Text{String: s.PrivacyMode, Valid: s.PrivacyMode != ""},
			nullTime(s.UpdatedAt)}, docs...)...)
	return err
}

// Delete implements store.DeviceSettingsRecords.
func (r deviceSettings) Delete(imei string) error {
	r.t.forget(tableDeviceSettings, imei)
	_, err := r.t.exec(`DELETE FROM device_settings WHERE imei = $1`, imei)
	return err
}

// organizationSettings are the organizations' default settings: table
// organization_settings, one row per organization.
type organizationSettings struct{ t *tx }

// OrganizationSettings implements store.TrackRecords.
func (t *tx) OrganizationSettings() store.OrganizationSettingsRecords {
	return organizationSettings{t}
}

// orgSettingsColumns are the columns of an organization's settings Get reads.
const orgSettingsColumns = `s.forbid_legacy_firmware, s.device, s.events, s.privacy, s.privacy_mode_config, s.control, s.updated_at`

// Get implements store.OrganizationSettingsRecords, once per organization
// and transaction (memo.go).
func (r organizationSettings) Get(orgID int64) (*store.OrgSettings, error) {
	s := store.OrgSettings{OrganizationID: orgID}
	var device, events, privacy, modes, control []byte
	key := strconv.FormatInt(orgID, 10)
	err := getMemo(r.t, tableOrgSettings, key, `SELECT `+orgSettingsColumns+` FROM organization_settings s WHERE s.organization_id = $1`,
		[]any{&s.ForbidLegacyFirmware, &device, &events, &privacy, &modes, &control, zeroTime{&s.UpdatedAt}}, orgID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.NotFound("settings of organization %d", orgID)
	}
	if err != nil {
		return nil, err
	}
	err = decodeDocuments(fmt.Sprintf("organization %d", orgID), []*[]byte{&device, &events, &privacy, &modes, &control},
		[]any{&s.Device, &s.Events, &s.Privacy, &s.PrivacyModeConfig, &s.Control})
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// Put implements store.OrganizationSettingsRecords.
func (r organizationSettings) Put(s *store.OrgSettings) error {
	docs, err := documents(part{s.Device, s.Device == nil}, part{s.Events, s.Events == nil},
		part{s.Privacy, s.Privacy == nil}, part{s.PrivacyModeConfig, s.PrivacyModeConfig == nil},
		part{s.Control, s.Control == nil})
	if err != nil {
		return err
	}
	r.t.forget(tableOrgSettings, strconv.FormatInt(s.OrganizationID, 10))
	_, err = r.t.exec(`INSERT INTO organization_settings (organization_id, forbid_legacy_firmware, updated_at,
			device, events, privacy, privacy_mode_config, control)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (organization_id) DO UPDATE SET forbid_legacy_firmware = EXCLUDED.forbid_legacy_firmware,
			updated_at = EXCLUDED.updated_at, device = EXCLUDED.device, events = EXCLUDED.events,
			privacy = EXCLUDED.privacy, privacy_mode_config = EXCLUDED.privacy_mode_config,
			control = EXCLUDED.control`,
		append([]any{s.OrganizationID, s.ForbidLegacyFirmware, nullTime(s.UpdatedAt)}, docs...)...)
	return err
}
