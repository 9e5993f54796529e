// The PostgreSQL store: statistics rows upserted by identity, and the per-partition positions stored
// in the same transaction as the rows they imply (exactly-once on its own).
// Migrations are numbered and applied in order, each in a transaction, under an advisory lock so that
// instances starting together do not race.

export const SCHEMA_LOCK_ID = 0x5354_5354; // "STST"

/**
 * Every series rolled up to the hour of its newest window shorter than an hour (longer windows would
 * make rollups of one window each; the sink does not roll them either): what the sink leaves behind having written
 * the windows in order (migration 3 runs it on the windows stored before; the query bench on its fill).
 */
export const ROLL_ALL = `SELECT count(*) FROM streamstats_roll(
    ARRAY(SELECT w.series FROM streamstats_windows w WHERE w.period < 3600 GROUP BY w.series ORDER BY w.series),
    ARRAY(SELECT max(w.period_start) FROM streamstats_windows w WHERE w.period < 3600 GROUP BY w.series ORDER BY w.series))`;

/** The rollup lock of the schema in use: "STST" in the high half, the rollups table's oid in the low. */
const ROLLUP_LOCK = `(${SCHEMA_LOCK_ID}::bigint << 32) | 'streamstats_rollups'::regclass::oid::bigint`;

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
  // 3: hourly rollups, so that a query over a long range merges one row per series and hour instead
  // of every window (rollups.ts has the rules). streamstats_series.rolled_until: the windows of the
  // series that start before it are merged, hour by hour, into streamstats_rollups; the ones from it
  // on are read as they are. Rollups are made by streamstats_roll() (the sink calls it when a series
  // reaches a new hour) and removed by the triggers below when a window before rolled_until is
  // written, updated or deleted, which moves rolled_until back to that window's hour: a rollup exists
  // only while it is the exact merge of the windows it covers. Existing windows are rolled up here.
  `
  ALTER TABLE streamstats_series ADD COLUMN rolled_until timestamptz NOT NULL DEFAULT '-infinity';
  -- The window's sketch buckets in binary beside its JSON (sketchBin() in write.ts: 12 bytes a bucket,
  -- an int4 code 2k / 2k+1 for positive / negative bucket k and a float8 count, big-endian), so that
  -- rolling up and the API concatenate bytes instead of expanding JSON; null for rows written before.
  ALTER TABLE streamstats_windows ADD COLUMN sketch_bin bytea;
  -- A sketch changed by an UPDATE that does not also set sketch_bin (a script, the view's insert
  -- trigger) makes sketch_bin stale: it is dropped, and the JSON read in its place.
  CREATE FUNCTION streamstats_windows_sketch_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
  BEGIN
    NEW.sketch_bin := NULL;
    RETURN NEW;
  END
  $fn$;
  CREATE TRIGGER streamstats_windows_sketch_changed BEFORE UPDATE ON streamstats_windows FOR EACH ROW
    WHEN (NEW.sketch IS DISTINCT FROM OLD.sketch AND NEW.sketch_bin IS NOT DISTINCT FROM OLD.sketch_bin)
    EXECUTE FUNCTION streamstats_windows_sketch_changed();
  -- The same from a sketch's JSON, for windows stored without sketch_bin.
  CREATE FUNCTION streamstats_sketch_pack(s jsonb) RETURNS bytea LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT string_agg(int4send(e.code) || float8send(e.v), ''::bytea) FROM (
      SELECT 2 * key::integer AS code, value::float8 AS v FROM jsonb_each_text(s -> 'pos')
      UNION ALL SELECT 2 * key::integer + 1, value::float8 FROM jsonb_each_text(s -> 'neg')) e
  $fn$;
  -- One row per (series, hour, partition, topic, window period, unit): every column a filter or a
  -- result group can tell apart. Its sketch is its windows' sketch_bin concatenated (a code may come
  -- more than once; the counts of a code add up): concatenating is cheap where merging in SQL means
  -- a row per bucket, and the API adds the buckets up in Node.
  CREATE TABLE streamstats_rollups (
    series          uuid             NOT NULL,
    bucket_start    timestamptz      NOT NULL,  -- the hour, aligned to the epoch
    first_start     timestamptz      NOT NULL,  -- min(period_start) of its windows
    last_end        timestamptz      NOT NULL,  -- max(period_end) of its windows
    duration_start  timestamptz      NOT NULL,
    duration_end    timestamptz      NOT NULL,
    windows         integer          NOT NULL,
    count           bigint           NOT NULL,
    sum             double precision NOT NULL,
    min             double precision NOT NULL,
    max             double precision NOT NULL,
    m2              double precision NOT NULL,  -- Chan's merge of the windows' m2
    partition       integer          NOT NULL,
    period          integer          NOT NULL,
    topic           text             NOT NULL,
    unit            text,
    no_sketch       integer          NOT NULL,  -- windows stored without a sketch
    sk_a_lo         double precision,           -- min and max relative accuracy of the sketches
    sk_a_hi         double precision,
    sk_zero         double precision NOT NULL,
    sketch          bytea                       -- null when no window has a sketch (see above)
  );
  CREATE INDEX streamstats_rollups_series ON streamstats_rollups (series, bucket_start);
  -- Rolls the windows of each series up to the hour of its upto (exclusive), from its rolled_until,
  -- and returns every series' rolled_until (ms since the epoch) afterwards.
  -- Locking: a roll takes the schema's rollup lock (an advisory lock keyed by the rollups table's
  -- oid, ROLLUP_LOCK below) exclusively in a first statement and reads the windows in a second, whose
  -- snapshot is taken once the lock is held; a writer of windows takes it shared (the trigger below)
  -- before it checks rolled_until, and both hold it to commit. So a window written during a roll is
  -- either committed before the roll reads (and rolled up) or checked after the roll committed (and
  -- reopens its hour): never rolled over without being in the rollup. The sink rolls in a transaction
  -- of its own, after the emission's, so it never holds the lock shared while it waits for it.
  CREATE FUNCTION streamstats_roll(ids uuid[], upto timestamptz[]) RETURNS TABLE (id uuid, rolled_ms double precision)
  LANGUAGE sql AS $fn$
    SELECT pg_advisory_xact_lock(${ROLLUP_LOCK});
    WITH t AS (
      SELECT t.id, max(date_bin('1 hour', t.upto, timestamptz '1970-01-01 00:00:00+00')) AS hi
      FROM unnest(ids, upto) AS t(id, upto) GROUP BY t.id),
    c AS (
      SELECT s.id, s.rolled_until AS lo, t.hi FROM streamstats_series s JOIN t ON t.id = s.id
      WHERE s.rolled_until < t.hi ORDER BY s.id FOR UPDATE OF s),
    k AS (
      SELECT w.*, date_bin('1 hour', w.period_start, timestamptz '1970-01-01 00:00:00+00') AS bucket
      FROM c JOIN streamstats_windows w ON w.series = c.id AND w.period_start >= c.lo AND w.period_start < c.hi),
    m AS (
      SELECT k.*, sum(k.sum) OVER g / sum(k.count) OVER g AS gmean FROM k
      WINDOW g AS (PARTITION BY k.series, k.bucket, k.partition, k.topic, k.period, k.unit)),
    mo AS (
      SELECT m.series, m.bucket, m.partition, m.topic, m.period, m.unit, count(*)::integer AS windows, sum(m.count) AS count,
        sum(m.sum) AS sum, min(m.min) AS min, max(m.max) AS max,
        greatest(sum(m.m2) + sum(m.count * (m.sum / m.count - m.gmean) * (m.sum / m.count - m.gmean)), 0) AS m2,
        min(m.period_start) AS first_start, max(m.period_start + make_interval(secs => m.period)) AS last_end,
        min(m.duration_start) AS duration_start, max(m.duration_end) AS duration_end,
        count(*) FILTER (WHERE m.sketch IS NULL)::integer AS no_sketch, min((m.sketch ->> 'a')::float8) AS sk_a_lo,
        max((m.sketch ->> 'a')::float8) AS sk_a_hi, coalesce(sum((m.sketch ->> 'zero')::float8), 0) AS sk_zero,
        string_agg(coalesce(m.sketch_bin, streamstats_sketch_pack(m.sketch)), ''::bytea) AS packed
      FROM m GROUP BY 1, 2, 3, 4, 5, 6),
    ins AS (
      INSERT INTO streamstats_rollups (series, bucket_start, first_start, last_end, duration_start, duration_end, windows, count,
          sum, min, max, m2, partition, period, topic, unit, no_sketch, sk_a_lo, sk_a_hi, sk_zero, sketch)
      SELECT mo.series, mo.bucket, mo.first_start, mo.last_end, mo.duration_start, mo.duration_end, mo.windows, mo.count,
        mo.sum, mo.min, mo.max, mo.m2, mo.partition, mo.period, mo.topic, mo.unit, mo.no_sketch, mo.sk_a_lo, mo.sk_a_hi,
        mo.sk_zero, mo.packed
      FROM mo),
    upd AS (
      UPDATE streamstats_series s SET rolled_until = c.hi FROM c WHERE s.id = c.id RETURNING s.id, s.rolled_until)
    SELECT t.id, date_part('epoch', coalesce(upd.rolled_until, s.rolled_until)) * 1000
    FROM t JOIN streamstats_series s ON s.id = t.id LEFT JOIN upd ON upd.id = t.id
  $fn$;
  -- A window written, changed or removed before its series' rolled_until: rolled_until goes back to
  -- the window's hour and the rollups from there on are removed (the next streamstats_roll() merges
  -- them again). Statement-level, over the transition table: one join per COPY or upsert, not a call
  -- per row, and in the steady state (windows written in order) it finds nothing to do.
  CREATE FUNCTION streamstats_windows_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
  BEGIN
    -- Shared: waits only for a roll in progress, never for another writer.
    PERFORM pg_advisory_xact_lock_shared(${ROLLUP_LOCK});
    WITH late AS (
      SELECT c.series, date_bin('1 hour', min(c.period_start), timestamptz '1970-01-01 00:00:00+00') AS hour
      FROM changed c JOIN streamstats_series s ON s.id = c.series
      WHERE c.period_start < s.rolled_until GROUP BY c.series),
    moved AS (
      UPDATE streamstats_series s SET rolled_until = late.hour FROM late
      WHERE s.id = late.series AND s.rolled_until > late.hour RETURNING s.id, s.rolled_until)
    DELETE FROM streamstats_rollups r USING moved WHERE r.series = moved.id AND r.bucket_start >= moved.rolled_until;
    RETURN NULL;
  END
  $fn$;
  CREATE TRIGGER streamstats_windows_inserted AFTER INSERT ON streamstats_windows
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION streamstats_windows_changed();
  CREATE TRIGGER streamstats_windows_updated_to AFTER UPDATE ON streamstats_windows
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION streamstats_windows_changed();
  CREATE TRIGGER streamstats_windows_updated_from AFTER UPDATE ON streamstats_windows
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION streamstats_windows_changed();
  CREATE TRIGGER streamstats_windows_deleted AFTER DELETE ON streamstats_windows
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION streamstats_windows_changed();
  CREATE FUNCTION streamstats_windows_truncated() RETURNS trigger LANGUAGE plpgsql AS $fn$
  BEGIN
    PERFORM pg_advisory_xact_lock_shared(${ROLLUP_LOCK});
    TRUNCATE streamstats_rollups;
    UPDATE streamstats_series SET rolled_until = '-infinity' WHERE rolled_until <> '-infinity';
    RETURN NULL;
  END
  $fn$;
  CREATE TRIGGER streamstats_windows_truncated AFTER TRUNCATE ON streamstats_windows
    FOR EACH STATEMENT EXECUTE FUNCTION streamstats_windows_truncated();
  -- The windows stored so far, each series up to the hour of its latest window.
  ${ROLL_ALL};
  `,
  // 4: a series is what the engine keys one: name, unit and groupby. Up to version 3 the unit was only
  // a column of the window, so one name and groupby seen in two units (a Ceilometer counter_unit, a
  // JSON_UNIT field that differs) was one series, and the second unit's window of a period was
  // refused as the first's duplicate. A series with a unit now has an id of its own (seriesId() in
  // identity.ts); one without keeps the id it had, so a store whose rows have no unit changes no row.
  // The windows and rollups with a unit move to the series of their unit, which starts rolled up as
  // far as the one they leave: a rollup row is per unit already, so every rollup stays the exact merge
  // of its windows, and the triggers that would reopen the hours are off for the move.
  `
  CREATE FUNCTION streamstats_series_id(n text, k text, u text) RETURNS uuid LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT md5(convert_to(n, 'UTF8') || decode('00', 'hex') || convert_to(k, 'UTF8')
      || CASE WHEN u IS NULL THEN ''::bytea ELSE decode('00', 'hex') || convert_to(u, 'UTF8') END)::uuid
  $fn$;
  ALTER TABLE streamstats_series ADD COLUMN unit text;
  CREATE TEMP TABLE streamstats_unit_moves ON COMMIT DROP AS
    SELECT u.old_id, u.unit, streamstats_series_id(s.name, streamstats_groupby_key(s.groupby), u.unit) AS new_id,
      s.name, s.groupby, s.rolled_until
    FROM (SELECT DISTINCT series AS old_id, unit FROM streamstats_windows WHERE unit IS NOT NULL
          UNION SELECT series, unit FROM streamstats_rollups WHERE unit IS NOT NULL) u
    JOIN streamstats_series s ON s.id = u.old_id;
  INSERT INTO streamstats_series (id, name, groupby, unit, rolled_until)
    SELECT new_id, name, groupby, unit, rolled_until FROM streamstats_unit_moves ON CONFLICT (id) DO NOTHING;
  UPDATE streamstats_rollups r SET series = m.new_id FROM streamstats_unit_moves m WHERE r.series = m.old_id AND r.unit = m.unit;
  ALTER TABLE streamstats_windows DISABLE TRIGGER streamstats_windows_updated_to;
  ALTER TABLE streamstats_windows DISABLE TRIGGER streamstats_windows_updated_from;
  UPDATE streamstats_windows w SET series = m.new_id FROM streamstats_unit_moves m WHERE w.series = m.old_id AND w.unit = m.unit;
  ALTER TABLE streamstats_windows ENABLE TRIGGER streamstats_windows_updated_to;
  ALTER TABLE streamstats_windows ENABLE TRIGGER streamstats_windows_updated_from;
  -- A series all of whose windows had a unit is left with none.
  DELETE FROM streamstats_series s USING (SELECT DISTINCT old_id FROM streamstats_unit_moves) m
    WHERE s.id = m.old_id AND NOT EXISTS (SELECT 1 FROM streamstats_windows w WHERE w.series = s.id)
      AND NOT EXISTS (SELECT 1 FROM streamstats_rollups r WHERE r.series = s.id);
  -- Version 1's writers through the view: the row's unit is part of its series.
  CREATE OR REPLACE FUNCTION streamstats_statistics_insert() RETURNS trigger LANGUAGE plpgsql AS $fn$
  DECLARE
    sid uuid := streamstats_series_id(NEW.name, coalesce(NEW.groupby_key, streamstats_groupby_key(NEW.groupby)), NEW.unit);
  BEGIN
    INSERT INTO streamstats_series (id, name, groupby, unit) VALUES (sid, NEW.name, NEW.groupby, NEW.unit) ON CONFLICT (id) DO NOTHING;
    INSERT INTO streamstats_windows (series, period_start, duration_start, duration_end, count, sum, min, max, m2,
        partition, period, topic, unit, sketch)
      VALUES (sid, NEW.period_start, NEW.duration_start, NEW.duration_end, NEW.count, NEW.sum, NEW.min, NEW.max, NEW.m2,
        coalesce(NEW.partition, -1), round(NEW.period)::integer, coalesce(NEW.topic, ''), NEW.unit, NEW.sketch)
      ON CONFLICT (series, period_start, partition, topic) DO UPDATE SET duration_start = EXCLUDED.duration_start,
        duration_end = EXCLUDED.duration_end, count = EXCLUDED.count, sum = EXCLUDED.sum, min = EXCLUDED.min,
        max = EXCLUDED.max, m2 = EXCLUDED.m2, period = EXCLUDED.period, sketch = EXCLUDED.sketch, updated_at = now();
    RETURN NEW;
  END
  $fn$;
  `,
  // 5: LATE_RECORDS=amend. A window's row is amended in place: its revision (0 for the first emission;
  // an upsert never replaces a row with an older revision), how its window was closed, and the late
  // records merged into it; rows written without amendment keep the defaults. A stored point names
  // where the lane's kept closed windows start (kept_from_ms), so that a restart rebuilds exactly
  // those from the replay. The view keeps the columns of version 1 (its readers select *): the
  // quality columns are read from streamstats_windows.
  `
  ALTER TABLE streamstats_windows ADD COLUMN revision bigint NOT NULL DEFAULT 0,
    ADD COLUMN closed_by text, ADD COLUMN late_records bigint NOT NULL DEFAULT 0;
  ALTER TABLE streamstats_positions ADD COLUMN kept_from_ms double precision;
  `,
];

export const TABLES = {
  /** A view (version 2 on): the rows with every column of version 1. */
  statistics: 'streamstats_statistics',
  series: 'streamstats_series',
  windows: 'streamstats_windows',
  /** Version 3 on: windows merged per series and hour (rollups.ts). */
  rollups: 'streamstats_rollups',
  positions: 'streamstats_positions',
} as const;
