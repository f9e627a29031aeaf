-- Device control settings (store/devicecontrol.go): operating mode, USB
-- OTG, tailgating alert mute, ADAS calibration, PIN code hashes and camera
-- names of a device, and an organization's defaults of them, as one jsonb
-- document beside the other parts of the settings; NULL when none is set.

-- +goose Up
ALTER TABLE device_settings ADD COLUMN control jsonb;
ALTER TABLE organization_settings ADD COLUMN control jsonb;

-- +goose Down
ALTER TABLE organization_settings DROP COLUMN control;
ALTER TABLE device_settings DROP COLUMN control;
