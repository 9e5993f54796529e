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
];

export const TABLES = { statistics: 'streamstats_statistics', positions: 'streamstats_positions' } as const;
