-- Event notifications (cloudapi/eventrecipients.go).
--
-- The e-mail addresses told of each event type on a device
-- (store/eventrecipients.go): an object from event type (API syntax) to an
-- array of addresses, NULL while the device has none.
--
-- The queue of event notification e-mails (store/eventmail.go): one row
-- per stored event and recipient, deleted once sent or given up. It
-- outlives the device; the mailer drops a job whose event is gone.

-- +goose Up
ALTER TABLE device_settings ADD COLUMN notification_recipients jsonb
    CHECK (jsonb_typeof(notification_recipients) = 'object');

CREATE TABLE event_mail (
    event_id        bigint      NOT NULL,
    recipient       text        NOT NULL,
    imei            text        NOT NULL,
    queued_at       timestamptz NOT NULL,
    attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at timestamptz NOT NULL,
    PRIMARY KEY (event_id, recipient)
);
CREATE INDEX event_mail_due ON event_mail (next_attempt_at);

-- +goose Down
DROP TABLE event_mail;
ALTER TABLE device_settings DROP COLUMN notification_recipients;
