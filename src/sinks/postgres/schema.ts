// The PostgreSQL store: statistics rows upserted by identity, and the per-partition positions stored
// in the same transaction as the rows they imply (exactly-once on its own).
// Migrations are numbered and applied in order, each in a transaction, under an advisory lock so that
// instances starting together do not race.

export const SCHEMA_LOCK_ID = 0x5354_5354; // "STST"

export const MIGRATIONS: readonly string[] = [
  // 1: statistics and positions
  `
  CREATE TABLE IF NOT EXISTS streamstats_statistics (
    name            text             NOT NULL,
    groupby_key     text             NOT NULL,  -- canonical JSON of the sorted groupby pairs: part of the identity
    groupby         jsonb            NOT NULL,
    topic           text             NOT NULL DEFAULT '',
    partition       integer          NOT NULL DEFAULT -1,
    period_start    timestamptz      NOT NULL,
    period_end      timestamptz      NOT NULL,
    period          double precision NOT NULL,
    unit            text,
    count           bigint           NOT NULL,
    sum             double precision NOT NULL,
    min             double precision NOT NULL,
    max             double precision NOT NULL,
    avg             double precision NOT NULL,
    m2              double precision NOT NULL,  -- sum of squared deviations: partials merge exactly (Chan)
    stddev          double precision NOT NULL,
    duration_start  timestamptz      NOT NULL,
    duration_end    timestamptz      NOT NULL,
    duration        double precision NOT NULL,
    sketch          jsonb,                      -- mergeable quantile sketch (PERCENTILES), or null
    updated_at      timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (name, groupby_key, topic, partition, period_start)
  );
  CREATE INDEX IF NOT EXISTS streamstats_statistics_name_period ON streamstats_statistics (name, period_start);
  CREATE TABLE IF NOT EXISTS streamstats_positions (
    group_id      text             NOT NULL,
    topic         text             NOT NULL,
    partition     integer          NOT NULL,
    next_offset   bigint           NOT NULL,   -- where a restart resumes: the oldest offset feeding an open window
    watermark_ms  double precision NOT NULL,   -- windows ending at or before it were emitted
    applied_end   bigint           NOT NULL,   -- offsets below it were processed once
    updated_at    timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (group_id, topic, partition)
  );
  `,
  // 2: compact storage, ~1.8 KB -> ~0.2 KB per row on the default workload. A series (name + groupby,
  // hundreds of bytes of JSON) is stored once in streamstats_series under a 16-byte id, md5 of its
  // identity (computed the same way by the sink, seriesId() in identity.ts, and below for old rows); a
  // window row refers to it by id. The btree keys are then short and fixed-size rather than the
  // groupby's JSON twice over, no dimension value or name length can hit the btree row limit (2704
  // bytes), and the columns that follow from others (avg, stddev, period_end, duration) are computed
  // by the streamstats_statistics view, which keeps the columns and names of version 1 for readers.
  // No foreign key from windows to series: the sink writes both in one transaction, and a check per
  // row would cost every insert an index probe.
  `
  CREATE TABLE streamstats_series (
    id       uuid  PRIMARY KEY,   -- md5(utf8(name) || 0x00 || utf8(groupby_key)): the identity in 16 bytes
    name     text  NOT NULL,
    groupby  jsonb NOT NULL
  );
  -- Hash, not btree: the API only asks name = $1, and a hash index has no key length limit.
  CREATE INDEX streamstats_series_name ON streamstats_series USING hash (name);
  CREATE TABLE streamstats_windows (
    series          uuid             NOT NULL,
    period_start    timestamptz      NOT NULL,
    duration_start  timestamptz      NOT NULL,
    duration_end    timestamptz      NOT NULL,
    updated_at      timestamptz      NOT NULL DEFAULT now(),
    count           bigint           NOT NULL,
    sum             double precision NOT NULL,
    min             double precision NOT NULL,
    max             double precision NOT NULL,
    m2              double precision NOT NULL,  -- sum of squared deviations: partials merge exactly (Chan)
    partition       integer          NOT NULL DEFAULT -1,
    period          integer          NOT NULL,  -- seconds (WINDOW_SECONDS is a whole number)
    topic           text             NOT NULL DEFAULT '',
    unit            text,
    sketch          jsonb,                      -- mergeable quantile sketch (PERCENTILES), or null
    -- (series, period_start) first: the statistics API reads one series' windows by time range.
    PRIMARY KEY (series, period_start, partition, topic)
  );
  INSERT INTO streamstats_series (id, name, groupby)
    SELECT DISTINCT ON (name, groupby_key)
      md5(convert_to(name, 'UTF8') || decode('00', 'hex') || convert_to(groupby_key, 'UTF8'))::uuid, name, groupby
    FROM streamstats_statistics ORDER BY name, groupby_key, updated_at DESC;
  INSERT INTO streamstats_windows (series, period_start, duration_start, duration_end, updated_at, count, sum, min, max, m2,
      partition, period, topic, unit, sketch)
    SELECT md5(convert_to(name, 'UTF8') || decode('00', 'hex') || convert_to(groupby_key, 'UTF8'))::uuid, period_start, duration_start,
      duration_end, updated_at, count, sum, min, max, m2, partition, round(period)::integer, topic, unit, sketch
    FROM streamstats_statistics;
  DROP TABLE streamstats_statistics;
  -- Version 1's groupby_key (JSON.stringify of the sorted pairs) from the stored groupby. jsonb writes
  -- strings with the escapes JSON.stringify uses; keys sort bytewise (JS sorts UTF-16 units: the same
  -- order except for keys mixing characters above U+FFFF with U+E000..U+FFFF).
  CREATE FUNCTION streamstats_groupby_key(g jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT '[' || coalesce(string_agg('[' || to_jsonb(key)::text || ',' || value::text || ']', ',' ORDER BY key COLLATE "C"), '') || ']'
    FROM jsonb_each(g)
  $fn$;
  CREATE VIEW streamstats_statistics AS
    SELECT s.name, s.groupby, w.topic, w.partition, w.period_start,
      w.period_start + make_interval(secs => w.period) AS period_end, w.period::double precision AS period, w.unit,
      w.count, w.sum, w.min, w.max, w.sum / w.count AS avg, w.m2, sqrt(w.m2 / w.count) AS stddev,
      w.duration_start, w.duration_end, date_part('epoch', w.duration_end - w.duration_start) AS duration,
      w.sketch, w.updated_at, w.series, streamstats_groupby_key(s.groupby) AS groupby_key
    FROM streamstats_windows w JOIN streamstats_series s ON s.id = w.series;
  -- Writers of version 1's table (scripts, a backfill) keep working: an INSERT into the view stores
  -- the series and upserts the window, ignoring the derived columns. Row by row: the sink never uses it.
  CREATE FUNCTION streamstats_statistics_insert() RETURNS trigger LANGUAGE plpgsql AS $fn$
  DECLARE
    sid uuid := md5(convert_to(NEW.name, 'UTF8') || decode('00', 'hex')
      || convert_to(coalesce(NEW.groupby_key, streamstats_groupby_key(NEW.groupby)), 'UTF8'))::uuid;
  BEGIN
    INSERT INTO streamstats_series (id, name, groupby) VALUES (sid, NEW.name, NEW.groupby) ON CONFLICT (id) DO NOTHING;
    INSERT INTO streamstats_windows (series, period_start, duration_start, duration_end, count, sum, min, max, m2,
        partition, period, topic, unit, sketch)
      VALUES (sid, NEW.period_start, NEW.duration_start, NEW.duration_end, NEW.count, NEW.sum, NEW.min, NEW.max, NEW.m2,
        coalesce(NEW.partition, -1), round(NEW.period)::integer, coalesce(NEW.topic, ''), NEW.unit, NEW.sketch)
      ON CONFLICT (series, period_start, partition, topic) DO UPDATE SET duration_start = EXCLUDED.duration_start,
        duration_end = EXCLUDED.duration_end, count = EXCLUDED.count, sum = EXCLUDED.sum, min = EXCLUDED.min,
        max = EXCLUDED.max, m2 = EXCLUDED.m2, period = EXCLUDED.period, unit = EXCLUDED.unit, sketch = EXCLUDED.sketch,
        updated_at = now();
    RETURN NEW;
  END
  $fn$;
  CREATE TRIGGER streamstats_statistics_insert INSTEAD OF INSERT ON streamstats_statistics
    FOR EACH ROW EXECUTE FUNCTION streamstats_statistics_insert();
  `,
];

export const TABLES = {
  /** A view (version 2 on): the rows with every column of version 1. */
  statistics: 'streamstats_statistics',
  series: 'streamstats_series',
  windows: 'streamstats_windows',
  positions: 'streamstats_positions',
} as const;
