-- Daily partitions for the time series that grow fastest and are purged
-- by day: GPS samples, events and their files. A day's partition is
-- dropped whole by the retention purge once every record in it is due,
-- instead of deleting its rows one by one.
--
-- One function now creates the partition of one day or one month of any
-- partitioned table, named <table>_yYYYYmMMdDD or <table>_yYYYYmMM. A day
-- inside a month that already has a monthly partition (a database that
-- ran before this migration) is not given one: the month's partition holds
-- it. The tables keep their default partitions for rows outside the ranges
-- that exist.

-- +goose Up
DROP FUNCTION fleetcam_ensure_month_partitions(regclass, date, integer);

-- +goose StatementBegin
CREATE FUNCTION fleetcam_ensure_partition(parent regclass, unit text, start date)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    first date;
    month text;
    name  text;
BEGIN
    IF unit NOT IN ('day', 'month') THEN
        RAISE EXCEPTION 'partition unit % is neither day nor month', unit;
    END IF;
    first := date_trunc(unit, start)::date;
    month := format('%s_y%sm%s', parent::text, to_char(first, 'YYYY'), to_char(first, 'MM'));
    name  := month;
    IF unit = 'day' THEN
        IF to_regclass(month) IS NOT NULL THEN
            RETURN false;
        END IF;
        name := format('%s_y%sm%sd%s', parent::text, to_char(first, 'YYYY'), to_char(first, 'MM'), to_char(first, 'DD'));
    END IF;
    IF to_regclass(name) IS NOT NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE %I PARTITION OF %s FOR VALUES FROM (%L) TO (%L)',
        name, parent, first::timestamptz, (first + ('1 ' || unit)::interval)::timestamptz);
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION fleetcam_ensure_partition(regclass, text, date);

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
