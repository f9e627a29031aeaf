-- Hourly event counts (store/postgres/eventcounts.go): how many events each
-- organization has in each UTC hour, by partner and type, so that an
-- organization's event page counts the whole hours of its window from a
-- few rows instead of visiting every index entry of it, and a deep page
-- skips whole hours by their counts. The counts are written in the
-- transaction of the event they count (insert, delete, the retention
-- purge's dropped days, a copy into the database).
--
-- A count is kept per writing node (the cluster's node id, '' for a
-- server of its own): the group commits of two nodes never update one row,
-- so they never conflict over a count. An hour's count is the sum over its
-- nodes; the row of one node may be negative (it deleted events another
-- node inserted).

-- +goose Up
CREATE TABLE event_hours (
    organization_id bigint      NOT NULL,
    -- the events' time truncated to the UTC hour
    hour            timestamptz NOT NULL,
    -- 0 for events of no partner (the events' partner_id is NULL)
    partner_id      bigint      NOT NULL,
    type            text        NOT NULL,
    node            text        NOT NULL,
    events          bigint      NOT NULL,
    PRIMARY KEY (organization_id, hour, partner_id, type, node)
);
-- The retention purge's whole-day drop deletes the counts of the day's
-- hours, of every organization.
CREATE INDEX event_hours_hour ON event_hours (hour);

-- The counts of the events already stored, written in the order of the
-- key, so that the counts of an organization's window are on few pages. A
-- large table takes longer than the statement timeout a server's
-- connections have.
SET LOCAL statement_timeout = 0;
INSERT INTO event_hours (organization_id, hour, partner_id, type, node, events)
SELECT organization_id, date_trunc('hour', time, 'UTC'), coalesce(partner_id, 0), type, '', count(*)
  FROM events
 GROUP BY 1, 2, 3, 4
 ORDER BY 1, 2, 3, 4;

-- +goose Down
DROP TABLE event_hours;
