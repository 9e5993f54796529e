// PostgresSink against the real PostgreSQL, each test in a schema of its own: rows and the commit point
// in one transaction, replays upserted, the rows PostgreSQL refuses returned as rejections while the
// rest of the batch and the commit point are stored, a lost connection thrown, and a version 1 store
// migrated in place.
import net from 'node:net';
import pg from 'pg';
import t, { type Test } from 'tap';
import { StreamstatsError } from '../../src/errors.js';
import { groupbyKey, SeriesRefs } from '../../src/sinks/postgres/identity.js';
import { rowIdentity } from '../fixtures/reference.js';
import { ensureStaging, insertCopy, insertSeries, upsertCopy } from '../../src/sinks/postgres/write.js';
import { MIGRATIONS } from '../../src/sinks/postgres/schema.js';
import type { PostgresSink } from '../../src/sinks/postgres/sink.js';
import type { SinkCommit } from '../../src/sinks/types.js';
import type { RowBatch, StatsRow } from '../../src/windows/row.js';
import { Rng } from '../fixtures/gen.js';
import { openSink, testSchema, urlInSchema, PG_URL } from '../fixtures/pg.js';

const TOPIC = 'metrics';
const PARTITION = 3;

function row(i: number, over: Partial<StatsRow> = {}): StatsRow {
  const periodStart = over.period_start ?? new Date(Date.parse('2020-02-11T12:42:00.000Z') + (i % 5) * 60_000).toISOString();
  return {
    name: `cpu.idle_perc.${i % 7}`,
    unit: i % 2 === 0 ? 'percent' : null,
    groupby: { service: 'monitoring', hostname: `host-${i}`, az: i % 3 === 0 ? null : 'nova' },
    count: i + 2,
    sum: i * 1.5,
    min: -1,
    max: i * 1.5,
    avg: (i * 1.5) / (i + 2),
    stddev: 0.25,
    duration_start: periodStart,
    duration_end: new Date(Date.parse(periodStart) + 30_000).toISOString(),
    duration: 30,
    period: 60,
    period_start: periodStart,
    period_end: new Date(Date.parse(periodStart) + 60_000).toISOString(),
    topic: TOPIC,
    partition: PARTITION,
    ...over,
  };
}

function batch(rows: StatsRow[]): RowBatch {
  return { rows, ndjson: () => rows.map((r) => `${JSON.stringify(r)}\n`).join('') };
}

function commitAt(position: number): SinkCommit {
  return { topic: TOPIC, partition: PARTITION, point: { position, watermarkMs: 1_581_425_000_000, appliedEnd: position + 10 } };
}

/** Random BMP characters outside the surrogates: text that does not compress. */
function randomText(rng: Rng, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCharCode(rng.int(0x21, 0xd7ff));
  return s;
}

interface Stored {
  name: string;
  groupby: Record<string, string | null>;
  period_start: Date;
  count: string;
}

async function stored(pool: pg.Pool): Promise<Stored[]> {
  return (await pool.query<Stored>('SELECT name, groupby, period_start, count FROM streamstats_statistics')).rows;
}

/**
 * Writes `rows` with a commit point and checks the contract: exactly `bad` rejected, each detail
 * matching `detail`, every other row stored, the commit point stored.
 */
async function writeExpecting(t: Test, rows: StatsRow[], bad: number[], detail: RegExp): Promise<PostgresSink> {
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  const res = await sink.write(batch(rows), commitAt(500));
  t.same(res.rejected.map((r) => r.index), bad, `rows ${bad.join(', ')} rejected`);
  for (const r of res.rejected) t.match(r.detail, detail, `row ${r.index}: ${r.detail.slice(0, 200)}`);
  const got = new Set((await stored(pool)).map((r) => rowIdentity(r.name, r.groupby, r.period_start)));
  const missing = rows.filter((r, i) => !bad.includes(i) && !got.has(rowIdentity(r.name, r.groupby, r.period_start)));
  t.equal(missing.length, 0, 'every other row is stored');
  t.equal(got.size, rows.length - bad.length, 'and nothing else');
  const pos = await sink.readPositions(TOPIC, [PARTITION]);
  t.same(pos.get(PARTITION), { position: 500, watermarkMs: 1_581_425_000_000, appliedEnd: 510 }, 'the commit point is stored');
  return sink;
}

const good = (n: number): StatsRow[] => Array.from({ length: n }, (_, i) => row(i));

t.test('rows and the commit point are stored; derived columns read back; a replay updates in place', async (t) => {
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  const rows = good(50);
  rows[7]!.sketch = { a: 0.01, pos: { '100': 3, '230': 1 }, neg: { '5': 2 }, zero: 1, count: 7 };
  t.same((await sink.write(batch(rows), commitAt(100))).rejected, []);
  const { rows: got } = await pool.query<{ n: string; avg: number; stddev: number; period_end: Date; duration: number; sketch: unknown }>(
    `SELECT count(*) OVER () AS n, avg, stddev, period_end, duration, sketch FROM streamstats_statistics WHERE name = $1 AND groupby ->> 'hostname' = 'host-7'`,
    [rows[7]!.name],
  );
  t.equal(got.length, 1);
  t.equal(got[0]!.avg, rows[7]!.sum / rows[7]!.count, 'avg = sum / count');
  t.ok(Math.abs(got[0]!.stddev - 0.25) < 1e-12, 'stddev from m2');
  t.equal(got[0]!.period_end.toISOString(), rows[7]!.period_end, 'period_end = period_start + period');
  t.equal(got[0]!.duration, 30, 'duration from duration_start/end');
  t.same(got[0]!.sketch, rows[7]!.sketch, 'sketch stored');
  // COPY's text format: tab, newline, CR and backslash in any text column survive the escaping.
  const odd = row(60, { unit: 'a\tb\nc\rd\\e\\N', topic: '\\N', name: 'x\ty\\', groupby: { 'k\t': 'v\n\\' } });
  t.same((await sink.write(batch([odd]))).rejected, []);
  const back = await pool.query<{ name: string; unit: string; topic: string; groupby: unknown }>(`SELECT name, unit, topic, groupby FROM streamstats_statistics WHERE topic <> $1`, [TOPIC]);
  t.same(back.rows, [{ name: odd.name, unit: odd.unit, topic: odd.topic, groupby: odd.groupby }], 'text with COPY escapes reads back unchanged');
  // A replay (restart from an older position) writes the same identities again, with newer values.
  const again = good(50).map((r) => ({ ...r, count: r.count + 100 }));
  t.same((await sink.write(batch(again), commitAt(200))).rejected, []);
  const counts = await pool.query<{ n: string; c: string }>('SELECT count(*) AS n, min(count) AS c FROM streamstats_statistics WHERE topic = $1', [TOPIC]);
  t.equal(Number(counts.rows[0]!.n), 50, 'one row per identity after the replay');
  t.equal(Number(counts.rows[0]!.c), 102, 'the replayed values replaced the old ones');
  t.equal((await sink.readPositions(TOPIC, [PARTITION])).get(PARTITION)?.position, 200, 'the newer commit point');
  // A commit alone (an emission without rows) moves the position.
  t.same((await sink.write(batch([]), commitAt(300))).rejected, []);
  t.equal((await sink.readPositions(TOPIC, [PARTITION])).get(PARTITION)?.position, 300);
});

t.test('U+0000 in a name is rejected, the rest stored', async (t) => {
  const rows = good(20);
  rows[4] = row(4, { name: 'cpu\u0000idle' });
  await writeExpecting(t, rows, [4], /name holds U\+0000 at offset 3.*text cannot store/);
});

t.test('U+0000 in a dimension name is rejected, the rest stored', async (t) => {
  const rows = good(20);
  rows[0] = row(0, { groupby: { 'host\u0000name': 'a' } });
  await writeExpecting(t, rows, [0], /dimension "host\\u0000name": its name holds U\+0000 at offset 4.*jsonb/);
});

t.test('U+0000 in a dimension value is rejected, the rest stored', async (t) => {
  const rows = good(20);
  rows[19] = row(19, { groupby: { hostname: 'a\u0000' } });
  await writeExpecting(t, rows, [19], /dimension "hostname": its value holds U\+0000 at offset 1.*jsonb/);
});

t.test('a lone surrogate in a dimension value is rejected, the rest stored', async (t) => {
  const rows = good(20);
  rows[11] = row(11, { groupby: { hostname: 'ab\udc00' } });
  await writeExpecting(t, rows, [11], /dimension "hostname": its value holds a lone surrogate U\+DC00 at offset 2/);
});

t.test('two names that differ only in lone surrogates (one identity once stored) in one batch: the second is rejected', async (t) => {
  const rows = good(20);
  const groupby = { hostname: 'same' };
  rows[5] = row(5, { name: 'disk\ud800', groupby });
  rows[9] = row(5, { name: 'disk\udfff', groupby });
  // The same instant written another way is the same window too.
  rows[13] = row(12, { period_start: row(12).period_start.replace('.000Z', '+00:00') });
  const { url, pool } = await testSchema(t);
  const s = await openSink(t, url);
  const res = await s.write(batch(rows), commitAt(500));
  t.same(res.rejected.map((r) => r.index), [9, 13], 'the second of each pair is rejected');
  t.match(res.rejected[0]!.detail, /postgres 21000: not sent: the same identity as row 5 of this batch/);
  t.match(res.rejected[1]!.detail, /postgres 21000: not sent: the same identity as row 12 of this batch/);
  const names = (await stored(pool)).map((r) => r.name);
  t.equal(names.length, 18, 'every other row is stored');
  t.ok(names.includes('disk\ufffd'), 'the first is stored, its lone surrogate as U+FFFD');
  t.equal((await s.readPositions(TOPIC, [PARTITION])).get(PARTITION)?.position, 500, 'the commit point is stored');
});

t.test('a dimension value of 3,000 random characters and a 10 KB random name are stored (no btree holds them)', async (t) => {
  const rng = new Rng(3);
  const rows = good(20);
  rows[2] = row(2, { groupby: { hostname: randomText(rng, 3000) } });
  rows[3] = row(3, { name: randomText(rng, 10_240) });
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  t.same((await sink.write(batch(rows), commitAt(1))).rejected, []);
  const long = await pool.query<{ n: string }>('SELECT count(*) AS n FROM streamstats_statistics WHERE name = $1', [rows[3]!.name]);
  t.equal(Number(long.rows[0]!.n), 1, 'the long name is found by name (the hash index)');
  const dim = await pool.query<{ v: string }>(`SELECT groupby ->> 'hostname' AS v FROM streamstats_statistics WHERE name = $1 AND length(groupby ->> 'hostname') = 3000`, [rows[2]!.name]);
  t.equal(dim.rows[0]?.v, rows[2]!.groupby['hostname'], 'the long dimension value reads back');
  t.equal((await stored(pool)).length, 20);
});

t.test('windows in years 9999 and 10000 are stored: period_end is computed, and binary COPY never parses +010000', async (t) => {
  const rows = good(10);
  rows[6] = row(6, { period_start: '9999-12-31T23:59:00.000Z', duration_start: '9999-12-31T23:59:10.000Z', duration_end: '9999-12-31T23:59:40.000Z', period_end: '+010000-01-01T00:00:00.000Z' });
  const y10k = '+010000-01-01T00:00:00.000Z';
  rows[7] = row(7, { period_start: y10k, duration_start: y10k, duration_end: '+010000-01-01T00:00:30.000Z', period_end: '+010000-01-01T00:01:00.000Z' });
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  t.same((await sink.write(batch(rows), commitAt(1))).rejected, []);
  const r = await pool.query<{ s: number; e: number; d: number }>(
    `SELECT date_part('epoch', period_start) * 1000 AS s, date_part('epoch', period_end) * 1000 AS e, duration AS d FROM streamstats_statistics WHERE period_start > '9999-01-01' ORDER BY period_start`,
  );
  t.same(r.rows.map((x) => [x.s, x.e, x.d]), [
    [Date.parse(rows[6]!.period_start), Date.parse(rows[6]!.period_end), 30],
    [Date.parse(y10k), Date.parse(rows[7]!.period_end), 30],
  ]);
});

t.test('values binary COPY cannot carry are rejected before sending: a NaN count, a period that is not whole seconds, a timestamp that does not parse', async (t) => {
  const rows = good(20);
  rows[1] = row(1, { count: Number.NaN });
  rows[8] = row(8, { period: 0.5 });
  rows[13] = row(13, { duration_end: 'yesterday' });
  await writeExpecting(t, rows, [1, 8, 13], /^postgres: not sent: (count NaN is not a whole number|period 0\.5 is not a whole number of seconds|duration_end "yesterday" is not an ISO 8601 timestamp)/);
});

t.test('rows no check foresees are found by bisection: a window in year -10000, a topic over the btree limit', async (t) => {
  const rng = new Rng(5);
  const rows = good(300);
  const bc = '-010000-01-01T00:00:00.000Z';
  rows[3] = row(3, { period_start: bc, duration_start: bc, duration_end: bc, period_end: '-010000-01-01T00:01:00.000Z' });
  // ~3,000 bytes of UTF-8: over the btree maximum, under the index page size.
  rows[150] = row(150, { topic: randomText(rng, 1000) });
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  const res = await sink.write(batch(rows), commitAt(500));
  t.same(res.rejected.map((r) => r.index), [3, 150]);
  // Binary COPY says 22008; the single row is then tried as text, which says 22009 (its parser's words).
  t.match(res.rejected[0]!.detail, /^postgres 2200[89]: (timestamp|time zone displacement) out of range/);
  t.match(res.rejected[1]!.detail, /^postgres 54000: index row size \d+ exceeds btree version \d maximum 2704 for index "streamstats_windows_pkey"/);
  t.notMatch(res.rejected.map((r) => r.detail).join('\n'), /postgres:\/\//, 'no connection string in a detail');
  t.equal((await stored(pool)).length, 298, 'every other row is stored');
  t.equal((await sink.readPositions(TOPIC, [PARTITION])).get(PARTITION)?.position, 500, 'the commit point is stored');
});

/** A TCP proxy in front of PG_URL: its sockets can be cut, and the server closed, under the sink. */
async function pgProxy(): Promise<{ proxy: net.Server; sockets: Set<net.Socket>; url: string }> {
  const target = new URL(PG_URL);
  const sockets = new Set<net.Socket>();
  const proxy = net.createServer((c) => {
    const s = net.connect(Number(target.port || 5432), target.hostname);
    c.pipe(s).pipe(c);
    c.on('error', () => s.destroy());
    s.on('error', () => c.destroy());
    sockets.add(c).add(s);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const u = new URL(PG_URL);
  u.host = `127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
  return { proxy, sockets, url: u.toString() };
}

t.test('a lost connection throws (STREAMSTATS_SINK), it is never a row rejection', async (t) => {
  const { schema } = await testSchema(t);
  // A TCP proxy in front of the server: closing it cuts the sink off mid-life.
  const { proxy, sockets, url } = await pgProxy();
  const sink = await openSink(t, urlInSchema(url, schema));
  t.same((await sink.write(batch(good(5)), commitAt(1))).rejected, [], 'writes through the proxy');
  await new Promise<void>((r) => {
    proxy.close(() => r());
    for (const s of sockets) s.destroy();
  });
  const err = await sink.write(batch(good(5)), commitAt(2)).then(() => null, (e: unknown) => e);
  t.type(err, StreamstatsError);
  t.equal((err as StreamstatsError).code, 'STREAMSTATS_SINK');
  t.match((err as Error).message, /^postgres: writing 5 rows failed: /);
});

t.test('a connection cut between writes is retried: the write succeeds once the server answers again', async (t) => {
  const { schema, pool } = await testSchema(t);
  const { proxy, sockets, url } = await pgProxy();
  t.teardown(() => new Promise<void>((r) => proxy.close(() => r())));
  const sink = await openSink(t, urlInSchema(url, schema));
  t.same((await sink.write(batch(good(5)), commitAt(1))).rejected, [], 'writes through the proxy');
  // Every open connection dies (a failover, a restarted pgbouncer); new ones are accepted.
  for (const s of sockets) s.destroy();
  sockets.clear();
  await new Promise((r) => setTimeout(r, 100));
  t.same((await sink.write(batch(good(7)), commitAt(2))).rejected, [], 'the next write is retried on a new connection');
  t.equal((await sink.readPositions(TOPIC, [PARTITION])).get(PARTITION)?.position, 2, 'with its position');
  t.equal((await pool.query('SELECT count(*)::int AS n FROM streamstats_windows')).rows[0].n, 7, 'and its rows (the 5 first rows are updated in place)');
});

t.test('a version 1 store migrates in place: rows keep their identity, later writes update them', async (t) => {
  const { url, pool } = await testSchema(t);
  // Version 1 as it was, with rows written by version 1's statement.
  await pool.query('CREATE TABLE streamstats_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
  await pool.query(MIGRATIONS[0]!);
  await pool.query('INSERT INTO streamstats_migrations (version) VALUES (1)');
  const rows = good(30);
  rows[1] = row(1, { name: 'disk.\u00e9\u{1f600}', groupby: { 'h\u00f6st': 'v\u00e4l \\ "q"\n', other: null } });
  for (const r of rows) {
    await pool.query(
      `INSERT INTO streamstats_statistics (name, groupby_key, groupby, topic, partition, period_start, period_end, period, unit,
         count, sum, min, max, avg, m2, stddev, duration_start, duration_end, duration, sketch)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`,
      [r.name, groupbyKey(r.groupby), JSON.stringify(r.groupby), r.topic, r.partition, r.period_start, r.period_end, r.period, r.unit,
        r.count, r.sum, r.min, r.max, r.avg, r.stddev * r.stddev * r.count, r.stddev, r.duration_start, r.duration_end, r.duration, null],
    );
  }
  const sink = await openSink(t, url);
  const v = await pool.query<{ v: number }>('SELECT max(version) AS v FROM streamstats_migrations');
  t.equal(v.rows[0]!.v, MIGRATIONS.length, 'migrated to the latest version');
  const before = await pool.query<{ name: string; groupby: unknown; count: string; avg: number; period_end: Date }>(
    'SELECT name, groupby, count, avg, period_end FROM streamstats_statistics ORDER BY name, groupby::text, period_start');
  t.equal(before.rows.length, 30, 'every row migrated');
  t.ok(before.rows.some((r) => r.name === 'disk.\u00e9\u{1f600}'), 'non-ASCII name migrated');
  // The ids computed in SQL by the migration equal the sink's: the same rows again update, never add.
  t.same((await sink.write(batch(rows.map((r) => ({ ...r, count: r.count * 10 }))), commitAt(9))).rejected, []);
  const after = await pool.query<{ n: string; s: string }>('SELECT count(*) AS n, sum(count) AS s FROM streamstats_statistics');
  t.equal(Number(after.rows[0]!.n), 30, 'written again onto the migrated rows');
  t.equal(Number(after.rows[0]!.s), rows.reduce((a, r) => a + r.count * 10, 0), 'with the new values');
});

t.test("an INSERT into the view (version 1's writers) stores the row under the id the sink computes", async (t) => {
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  const groupby = { 'h\u00f6st': 'v\u00e4l \\ "q"\n\u0001', a: null, Z: '\u{1f600}' };
  const r = row(0, { groupby });
  // Without groupby_key: the view's function computes it from the groupby, as JSON.stringify would.
  await pool.query(
    `INSERT INTO streamstats_statistics (name, groupby, topic, partition, period_start, period_end, period, unit, count, sum, min, max, avg, m2, stddev,
       duration_start, duration_end, duration) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
    [r.name, JSON.stringify(groupby), r.topic, r.partition, r.period_start, r.period_end, r.period, r.unit, r.count, r.sum, r.min, r.max, r.avg,
      r.stddev * r.stddev * r.count, r.stddev, r.duration_start, r.duration_end, r.duration],
  );
  const key = await pool.query<{ k: string }>('SELECT groupby_key AS k FROM streamstats_statistics');
  t.equal(key.rows[0]?.k, groupbyKey(groupby), 'groupby_key reads as version 1 wrote it');
  t.same((await sink.write(batch([{ ...r, count: 99 }]))).rejected, []);
  const got = await pool.query<{ n: string; c: string }>('SELECT count(*) AS n, max(count) AS c FROM streamstats_statistics');
  t.same(got.rows[0], { n: '1', c: '99' }, "the sink's write updated the inserted row");
});

t.test('COPY, binary and text, into the table and through staging: tab, newline, CR, backslash, \\N and non-ASCII text unchanged (no bisection behind them)', async (t) => {
  const { url, pool } = await testSchema(t);
  await openSink(t, url);
  const refs = new SeriesRefs();
  const client = await pool.connect();
  try {
    await ensureStaging(client);
    const cases = [
      [insertCopy, 'binary', 'a\tb\nc\rd\\e\\N\u00e9\u{1f600}'],
      [insertCopy, 'text', '\\\\t\r\n\u00e9'],
      [upsertCopy, 'binary', '\\N'],
      [upsertCopy, 'text', '\t\\'],
    ] as const;
    for (const [i, [write, format, unit]] of cases.entries()) {
      const r = row(i, { unit, topic: '\\N', name: `x\ty\\${i}`, groupby: { 'k\t': 'v\n\\' }, sketch: { a: 0.01, pos: { '7': 1 }, neg: {}, zero: 1, count: 2 } });
      const rows = [{ index: 0, row: r, series: refs.of(r.name, r.groupby, r.unit) }];
      await client.query('BEGIN');
      await insertSeries(client, rows);
      await write(client, rows, format);
      await client.query('COMMIT');
      const back = await pool.query<Record<string, unknown>>(
        `SELECT name, unit, topic, groupby, count::float8 AS count, sum, min, max, period, partition, sketch,
           date_part('epoch', period_start) * 1000 AS ps, date_part('epoch', duration_end) * 1000 AS de FROM streamstats_statistics WHERE name = $1`,
        [r.name],
      );
      t.same(back.rows, [{
        name: r.name, unit, topic: '\\N', groupby: r.groupby, count: r.count, sum: r.sum, min: r.min, max: r.max, period: 60, partition: PARTITION,
        sketch: r.sketch, ps: Date.parse(r.period_start), de: Date.parse(r.duration_end),
      }], `${write.name} ${format}: reads back unchanged`);
    }
  } finally {
    client.release();
  }
});

t.test('two partitions writing the same new series at once, in opposite orders, neither deadlocks nor loses a row', async (t) => {
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  const N = 10_000;
  const rowsOf = (partition: number): StatsRow[] => Array.from({ length: N }, (_, i) => row(i, { partition, groupby: { hostname: `h${i}` }, name: 'm' }));
  const a = rowsOf(0);
  const b = rowsOf(1).reverse();
  // Two pooled connections first, so that neither write waits for a connection and they overlap.
  await Promise.all([0, 1].map((p) => sink.write(batch([]), { topic: TOPIC, partition: p, point: { position: 0, watermarkMs: 0, appliedEnd: 0 } })));
  const results = await Promise.all([
    sink.write(batch(a), { topic: TOPIC, partition: 0, point: { position: 1, watermarkMs: 0, appliedEnd: 1 } }),
    sink.write(batch(b), { topic: TOPIC, partition: 1, point: { position: 2, watermarkMs: 0, appliedEnd: 2 } }),
  ]);
  t.same(results.map((r) => r.rejected), [[], []]);
  const n = await pool.query<{ w: string; s: string }>('SELECT (SELECT count(*) FROM streamstats_windows) AS w, (SELECT count(*) FROM streamstats_series) AS s');
  t.same(n.rows[0], { w: String(2 * N), s: String(N) });
});

t.test('writes queued while a transaction runs share the next one: call order kept, each write its own rejections, each partition its latest point', async (t) => {
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  const at = (partition: number, position: number): SinkCommit => ({ topic: TOPIC, partition, point: { position, watermarkMs: 0, appliedEnd: position } });
  const first = good(5);
  // Issued without waiting, as the engine issues a pipelined sink's writes: the first runs alone, the
  // rest queue behind it and go together.
  const calls = [
    sink.write(batch(first), at(0, 10)),
    sink.write(batch(first.map((r) => ({ ...r, count: r.count + 1000 }))), at(0, 20)),
    sink.write(batch([row(40, { name: 'bad\u0000name' }), row(41)]), at(1, 5)),
    sink.write(batch([row(41, { count: 777 }), row(42)]), at(1, 6)),
    sink.write(batch([row(43), row(43)]), at(0, 30)),
  ];
  const results = await Promise.all(calls);
  t.same(results.map((r) => r.rejected.map((x) => x.index)), [[], [], [0], [], [1]], 'each write gets the rejections of its own rows, by its own indexes');
  t.match(results[4]!.rejected[0]!.detail, /21000.*same identity as row 0 of this batch/, 'a duplicate within one write is still refused');
  const got = await pool.query<{ host: string; count: string }>(`SELECT groupby ->> 'hostname' AS host, count FROM streamstats_statistics ORDER BY 1`);
  const want = [
    ...first.map((r) => ({ host: r.groupby['hostname']!, count: String(r.count + 1000) })),
    { host: 'host-41', count: '777' },
    { host: 'host-42', count: String(row(42).count) },
    { host: 'host-43', count: String(row(43).count) },
  ].sort((a, b) => (a.host < b.host ? -1 : 1));
  t.same(got.rows, want, 'a later write of the same identity wins, as written one after the other');
  const pos = await sink.readPositions(TOPIC, [0, 1]);
  t.same([pos.get(0)?.position, pos.get(1)?.position], [30, 6], "each partition's latest point");
});

t.test('a failed write fails the writes queued behind it too: none of their points may pass its rows', async (t) => {
  const { schema, pool } = await testSchema(t);
  const { proxy, sockets, url } = await pgProxy();
  const sink = await openSink(t, urlInSchema(url, schema));
  t.same((await sink.write(batch(good(2)), commitAt(1))).rejected, []);
  await new Promise<void>((r) => {
    proxy.close(() => r());
    for (const s of sockets) s.destroy();
  });
  const outcomes = await Promise.allSettled([sink.write(batch(good(3)), commitAt(2)), sink.write(batch(good(4)), commitAt(3)), sink.write(batch(good(5)), commitAt(4))]);
  t.same(outcomes.map((o) => o.status), ['rejected', 'rejected', 'rejected'], 'every queued write rejected');
  const pos = await pool.query<{ n: string }>('SELECT next_offset AS n FROM streamstats_positions');
  t.same(pos.rows, [{ n: '1' }], 'the stored point is the last one written');
});
