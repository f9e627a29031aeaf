-- Event notifications (cloudapi/eventrecipients.go).
--
-- The e-mail addresses told of each event type on a device
-- (store/eventrecipients.go): an object from event type (API syntax) to an
-- array of addresses, NULL while the device has none.

-- +goose Up
ALTER TABLE device_settings ADD COLUMN notification_recipients jsonb
    CHECK (jsonb_typeof(notification_recipients) = 'object');

-- +goose Down
ALTER TABLE device_settings DROP COLUMN notification_recipients;
