-- fleetcam's own bookkeeping: the version of the last store migration
-- (store/migrations.go) applied to the records, as opposed to this schema's
-- version, which goose keeps in fleetcam_schema_migrations; and the
-- monthly partitions of the time series.

-- +goose Up
CREATE TABLE fleetcam_meta (
    id            smallint PRIMARY KEY CHECK (id = 1),
    store_version integer  NOT NULL
);

-- The time series (GPS samples, events, the audit log, messages, webhook
-- deliveries) are tables partitioned by range of a timestamptz column, one
-- partition per calendar month (UTC) named <table>_yYYYYmMM, plus a default
-- partition <table>_default for rows far outside the months that exist (a
-- device clock years off). The engine creates the partitions of the months
-- around now when it starts and whenever the retention purge runs, and the
-- purge drops a month's partition once every organization's cutoff has
-- passed its end.
-- +goose StatementBegin
CREATE FUNCTION fleetcam_ensure_month_partitions(parent regclass, first_month date, months integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    m       date := date_trunc('month', first_month)::date;
    created integer := 0;
    name    text;
BEGIN
    FOR i IN 1..months LOOP
        name := format('%s_y%sm%s', parent::text, to_char(m, 'YYYY'), to_char(m, 'MM'));
        IF to_regclass(name) IS NULL THEN
            EXECUTE format('CREATE TABLE %I PARTITION OF %s FOR VALUES FROM (%L) TO (%L)',
                name, parent, m::timestamptz, (m + interval '1 month')::timestamptz);
            created := created + 1;
        END IF;
        m := (m + interval '1 month')::date;
    END LOOP;
    RETURN created;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION fleetcam_ensure_month_partitions(regclass, date, integer);
DROP TABLE fleetcam_meta;
