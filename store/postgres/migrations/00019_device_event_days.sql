-- Daily event counts per device (store/postgres/eventcounts.go): how many
-- events each device has in each UTC day, by the ownership they were
-- recorded for and by type, so that a device's event page counts the
-- whole days of its window from a few rows instead of visiting every
-- index entry of it, and reads its page from the days it spans only. A
-- device reports a few hundred events a day at most: days keep the table
-- small, and they are the events' partitions. The counts are written in
-- the transaction of the event they count, with its hourly count
-- (00018_event_hours.sql), wherever that is written.
--
-- As the hourly counts, a count is kept per writing node (the cluster's
-- node id, '' for a server of its own), so that the group commits of two
-- nodes never update one row; a day's count is the sum over its nodes,
-- and one node's row may be negative.

-- +goose Up
CREATE TABLE device_event_days (
    imei      text        NOT NULL,
    -- the events' ownership (0 for those recorded before ownership numbers)
    ownership bigint      NOT NULL,
    -- the events' time truncated to the UTC day
    day       timestamptz NOT NULL,
    type      text        NOT NULL,
    node      text        NOT NULL,
    events    bigint      NOT NULL,
    PRIMARY KEY (imei, ownership, day, type, node)
);
-- The retention purge's whole-day drop deletes the counts of the day, of
-- every device.
CREATE INDEX device_event_days_day ON device_event_days (day);

-- The counts of the events already stored, written in the order of the
-- key. A large table takes longer than the statement timeout a server's
-- connections have.
SET LOCAL statement_timeout = 0;
INSERT INTO device_event_days (imei, ownership, day, type, node, events)
SELECT imei, ownership, date_trunc('day', time, 'UTC'), type, '', count(*)
  FROM events
 GROUP BY 1, 2, 3, 4
 ORDER BY 1, 2, 3, 4;

-- +goose Down
DROP TABLE device_event_days;
