-- The times of the events that have comments (store/postgres/events.go,
-- eventColumnsWithin): an event page first asks whether any event of its
-- window has a comment, and looks each of its events' comments up only
-- when one has. Few events have comments, so the index stays small.

-- +goose Up
CREATE INDEX event_comments_time ON event_comments (event_time);

-- +goose Down
DROP INDEX event_comments_time;
