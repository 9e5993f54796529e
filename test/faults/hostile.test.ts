// Hostile input through the real broker: one topic holding malformed JSON, invalid UTF-8, empty and
// null (tombstone) values, wrong types, 1e999 and out-of-range numbers, timestamps far in the past and
// future, a message over MAX_MESSAGE_BYTES, JSON nested 100,000 deep, thousands of dimensions, and a
// flood of distinct series beyond MAX_SERIES, interleaved with good records. Each bad record must be
// dead-lettered to the DLQ topic with its reason and its original bytes while the stream goes on; the
// good records must still give exactly the independent computation's rows; dimension names like
// __proto__ stay ordinary names; and every consumed record is in exactly one place.
// First, as in the CLI: our produce path and the source's fetch decoder in kafkajs's module cache.
import '../../src/kafka/preload.js';
import '../../src/sources/kafka/preload.js';
import t from 'tap';
import { DLQ_HEADERS } from '../../src/sinks/dead-letter-kafka.js';
import { rowKey } from '../fixtures/harness.js';
import { brokers, createTopic, startEngine, uid, waitFor } from '../fixtures/kafka.js';
import { close, reference, type RefRecord } from '../fixtures/reference.js';
import { produceTo, readTopic, type OutMessage } from '../fixtures/faults.js';

const B = Date.UTC(2020, 0, 1);
/** Start of the last window of the good records (w4), where the flood goes. */
const LAST_WINDOW = B + 240_000;
/** Series open in the last window before the flood: the good ones. */
const OPEN_BEFORE_FLOOD = 8;
/** Good records sent before the first hostile message, and between two hostile messages. */
const LEAD = 20;
const BETWEEN = 5;
/**
 * Event time of the good record sent right before hostile message i (8 series per 10 s step): valid
 * records among the hostile ones carry it, so they neither arrive late nor move the watermark ahead.
 */
const nowAt = (i: number) => B + Math.floor((LEAD + BETWEEN * i - 1) / 8) * 10_000;
const MAX_SERIES = 20;
const MAX_MESSAGE_BYTES = 700_000;
const GOOD_SERIES = 8;
const FLOOD = 300;

const monasca = (name: string, value: unknown, ts: unknown, dims: unknown = { host: 'h' }) =>
  JSON.stringify({ metric: { name, dimensions: dims, timestamp: ts, value, value_meta: {} }, meta: { tenantId: 't1', region: 'r1' }, creation_time: 0 });

interface Hostile {
  readonly value: Buffer | string | null;
  /** Dead letters it must give: reason, and the element index for a record inside a JSON array. */
  readonly expect: ReadonlyArray<{ reason: string; element?: number; bytes?: Buffer }>;
  /** Records in it that are valid (only the array message has one). */
  readonly good?: RefRecord[];
}

function hostile(): Hostile[] {
  const dims5000: Record<string, string> = {};
  for (let i = 0; i < 5000; i++) dims5000[`d${i}`] = 'v';
  // JSON.parse makes "__proto__" an own property (an object literal would set the prototype instead).
  const protoDims = JSON.parse('{"__proto__":"p","constructor":"c","hasOwnProperty":"h","toString":"t"}') as Record<string, string>;
  return [
    { value: '{not json', expect: [{ reason: 'malformed_json' }] },
    { value: '{"metric":{"name":"x","value":NaN,"timestamp":1577836800000}}', expect: [{ reason: 'malformed_json' }] },
    { value: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x28, 0x22, 0x7d]), expect: [{ reason: 'invalid_utf8' }] },
    { value: '', expect: [{ reason: 'empty_message' }] },
    { value: null, expect: [{ reason: 'empty_message', bytes: Buffer.alloc(0) }] },
    { value: monasca('bad.value', 'abc', B + 1000), expect: [{ reason: 'wrong_type' }] },
    { value: monasca(42 as unknown as string, 1, B + 1000), expect: [{ reason: 'wrong_type' }] },
    { value: monasca('bad.dims', 1, B + 1000, 'not-an-object'), expect: [{ reason: 'wrong_type' }] },
    { value: monasca('bad.dimvalue', 1, B + 1000, { __proto__x: { polluted: 'yes' } }), expect: [{ reason: 'wrong_type' }] },
    { value: '{"metric":{"name":"proto.obj","dimensions":{"__proto__":{"polluted":"yes"}},"timestamp":1577836801000,"value":1}}', expect: [{ reason: 'wrong_type' }] },
    { value: monasca('bad.ts', 1, 'yesterday'), expect: [{ reason: 'wrong_type' }] },
    { value: monasca('missing.value', null, B + 1000), expect: [{ reason: 'missing_field' }] },
    { value: '{"metric":{"name":"inf","dimensions":{},"timestamp":1577836801000,"value":1e999}}', expect: [{ reason: 'non_finite_value' }] },
    { value: monasca('huge', 1e200, B + 1000), expect: [{ reason: 'non_finite_value' }] },
    { value: monasca('huge.neg', -1e151, B + 1000), expect: [{ reason: 'non_finite_value' }] },
    { value: monasca('before.1970', 1, -5), expect: [{ reason: 'bad_timestamp' }] },
    { value: monasca('after.9999', 1, 1e16), expect: [{ reason: 'bad_timestamp' }] },
    { value: monasca('year.3000', 1, Date.UTC(3000, 0, 1)), expect: [{ reason: 'future_timestamp' }] },
    // Valid, but its window closed long ago (the watermark is in 2020 by then).
    { value: monasca('year.2000', 1, Date.UTC(2000, 0, 1)), expect: [{ reason: 'late' }] },
    // The dead letter keeps the first MAX_MESSAGE_BYTES (flagged with the whole size), never the whole value.
    { value: `"${'x'.repeat(MAX_MESSAGE_BYTES + 1000)}"`, expect: [{ reason: 'too_large', bytes: Buffer.from(`"${'x'.repeat(MAX_MESSAGE_BYTES - 1)}`) }] },
    // 100,000 levels: V8 parses them; the record inside is not an object / has no metric name. The
    // array's one element is too deep to re-serialise, so its dead letter carries the whole message
    // (with element 0 in the headers).
    { value: '['.repeat(100_000) + ']'.repeat(100_000), expect: [{ reason: 'not_an_object', element: 0 }] },
    { value: '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000), expect: [{ reason: 'missing_field' }] },
    { value: monasca('many.dims', 1, B + 1000, dims5000), expect: [{ reason: 'too_many_dimensions' }] },
    { value: '"just a string"', expect: [{ reason: 'not_an_object' }] },
    {
      value: `[1,"x",${monasca('array.good', 7, nowAt(24))}]`,
      expect: [{ reason: 'not_an_object', element: 0, bytes: Buffer.from('1') }, { reason: 'not_an_object', element: 1, bytes: Buffer.from('"x"') }],
      good: [{ name: 'array.good', dims: { host: 'h', _tenant_id: 't1', _region: 'r1' }, tsMs: nowAt(24), value: 7 }],
    },
    {
      value: monasca('proto.dims', 3, nowAt(25), protoDims),
      expect: [],
      good: [{ name: 'proto.dims', dims: { ...protoDims, _tenant_id: 't1', _region: 'r1' }, tsMs: nowAt(25), value: 3 }],
    },
  ];
}

t.test('hostile messages are dead-lettered with reason and bytes, the stream goes on, good records give the right rows', async (t) => {
  const topic = await createTopic(t, 1);
  const dlq = await createTopic(t, 1);
  const protoBefore = Object.getOwnPropertyNames(Object.prototype).sort();

  // Good records: GOOD_SERIES series, one point every 10 s for 5 minutes (windows w0..w4).
  const good: Array<{ rec: RefRecord; json: string }> = [];
  for (let s = 0; s < 30 * 10_000; s += 10_000) {
    for (let h = 0; h < GOOD_SERIES; h++) {
      const value = (s / 10_000) * 10 + h + 0.25;
      good.push({ rec: { name: 'good.cpu', dims: { host: `h${h}`, _tenant_id: 't1', _region: 'r1' }, tsMs: B + s, value }, json: monasca('good.cpu', value, B + s, { host: `h${h}` }) });
    }
  }
  const hs = hostile();
  const messages: OutMessage[] = [];
  const expectByKey = new Map<string, { reasons: Hostile['expect']; value: Buffer }>();
  let records = 0;
  const valid: RefRecord[] = [];
  // The 'late' record needs the watermark in 2020 first: interleave hostile messages from the 20th good record on.
  let gi = 0;
  const pushGood = (n: number) => {
    for (let k = 0; k < n && gi < good.length; k++, gi++) {
      const g = good[gi]!;
      messages.push({ key: `g-${gi}`, value: g.json });
      valid.push(g.rec);
      records++;
    }
  };
  pushGood(LEAD);
  hs.forEach((h, i) => {
    if (h.good !== undefined && h.good.some((g) => g.tsMs !== good[gi - 1]!.rec.tsMs)) throw new Error(`hostile message ${i}: nowAt() is off`);
    const key = `h-${i}`;
    messages.push({ key, value: h.value });
    expectByKey.set(key, { reasons: h.expect, value: h.value === null ? Buffer.alloc(0) : Buffer.isBuffer(h.value) ? h.value : Buffer.from(h.value) });
    records += h.good === undefined ? Math.max(1, h.expect.length) : h.expect.length + h.good.length;
    if (h.good !== undefined) valid.push(...h.good);
    pushGood(BETWEEN);
  });
  // The rest of the good records up to w4 + 20 s (every good series is open in w4), then the flood
  // of new series in w4, then the remaining good records.
  while (gi < good.length && good[gi]!.rec.tsMs < LAST_WINDOW + 20_000) pushGood(1);
  for (let f = 0; f < FLOOD; f++) {
    messages.push({ key: `flood-${f}`, value: monasca('flood.series', 1, LAST_WINDOW + 25_000, { id: `s${f}` }) });
    records++;
  }
  pushGood(good.length);

  const e = startEngine(t, {
    KAFKA_TOPICS: topic,
    KAFKA_GROUP_ID: uid('g'),
    DEAD_LETTER: 'kafka',
    DLQ_TOPIC: dlq,
    MAX_SERIES: String(MAX_SERIES),
    MAX_MESSAGE_BYTES: String(MAX_MESSAGE_BYTES),
    BATCH_SIZE: '50',
    // Decoded on the main thread: a prototype polluted by decoding would show in this process.
    WORKER_THREADS: '0',
  });
  await produceTo(brokers(), topic, messages, { chunk: 10 });
  await waitFor([e], () => e.sum('streamstats_records_total') >= records && e.metric('streamstats_open_series') === 0 && e.sum('streamstats_consumer_lag_messages') === 0,
    'every record consumed, every window closed', 90_000);

  // Good records: exactly the independent computation.
  const rows = e.rows();
  const exp = reference([valid], 60_000, 5_000).rows;
  const goodRows = rows.filter((r) => r.name !== 'flood.series');
  const byKey = new Map(goodRows.map((r) => [rowKey(r), r]));
  t.equal(goodRows.length, exp.size, `one row per window of the valid records (${exp.size})`);
  let bad = 0;
  for (const [k, x] of exp) {
    const a = byKey.get(k);
    if (a === undefined || a.count !== x.count || a.min !== x.min || a.max !== x.max || !close(a.sum, x.sum) || !close(a.stddev, x.stddev, 1e-7)) {
      if (bad++ < 3) t.fail(`row ${k}`, { actual: a, expected: x });
    }
  }
  t.equal(bad, 0, 'the good records interleaved with hostile ones give exactly the independent computation');
  const proto = goodRows.find((r) => r.name === 'proto.dims');
  t.ok(proto !== undefined, 'the record with dimensions __proto__, constructor, hasOwnProperty is kept');
  t.same(Object.keys(proto?.groupby ?? {}).sort(), ['__proto__', '_region', '_tenant_id', 'constructor', 'hasOwnProperty', 'toString'], 'those names are ordinary groupby keys of the row');
  t.equal(proto?.groupby['__proto__'], 'p', '__proto__ kept as data');
  t.equal(Object.getPrototypeOf(proto?.groupby ?? {}), Object.prototype, '(the row read back is a plain object)');
  t.equal(({} as Record<string, unknown>)['polluted'], undefined, 'no prototype pollution');
  t.same(Object.getOwnPropertyNames(Object.prototype).sort(), protoBefore, 'Object.prototype unchanged');

  // The dead-letter topic: one message per rejected record, reason and original bytes.
  await e.refresh();
  const rejected = e.sum('streamstats_records_total') - e.metric('streamstats_records_total', { result: 'ok' });
  const dl = await readTopic(brokers(), dlq, rejected, { timeoutMs: 30_000 });
  t.equal(dl.length, rejected, `one DLQ message per rejected record (${rejected})`);
  let wrong = 0;
  for (const [key, x] of expectByKey) {
    const got = dl.filter((m) => m.key?.toString() === key).sort((a, b) => Number(a.headers[DLQ_HEADERS.element] ?? -1) - Number(b.headers[DLQ_HEADERS.element] ?? -1));
    const want = x.reasons;
    const ok = got.length === want.length && want.every((w, j) => {
      const m = got[j]!;
      const bytes = w.bytes ?? x.value;
      return m.headers[DLQ_HEADERS.reason] === w.reason &&
        (w.element === undefined ? m.headers[DLQ_HEADERS.element] === undefined : m.headers[DLQ_HEADERS.element] === String(w.element)) &&
        m.value !== null && Buffer.compare(m.value, bytes) === 0 &&
        m.headers[DLQ_HEADERS.sourceTopic] === topic && m.headers[DLQ_HEADERS.sourcePartition] === '0' &&
        m.headers[DLQ_HEADERS.sourceOffset] !== undefined && (m.headers[DLQ_HEADERS.detail] ?? '') !== '';
    });
    if (!ok && wrong++ < 5) {
      t.fail(`dead letters of ${key}`, {
        want: want.map((w) => ({ reason: w.reason, element: w.element })),
        got: got.map((m) => ({ headers: m.headers, bytes: m.value?.length, head: m.value?.subarray(0, 40).toString('hex') })),
      });
    }
  }
  t.equal(wrong, 0, 'every hostile record is in the DLQ with its reason, element, source headers and original bytes');

  // The flood: what MAX_SERIES left room for became rows, the rest is dead-lettered as series_limit.
  const floodRows = rows.filter((r) => r.name === 'flood.series');
  const floodDl = dl.filter((m) => m.key?.toString().startsWith('flood-') === true);
  t.ok(floodDl.length > 0 && floodDl.every((m) => m.headers[DLQ_HEADERS.reason] === 'series_limit'), `flood beyond MAX_SERIES dead-lettered as series_limit (${floodDl.length})`);
  t.ok(floodRows.length <= MAX_SERIES - OPEN_BEFORE_FLOOD, `at most MAX_SERIES - series already open flood rows (${floodRows.length})`);
  t.equal(floodRows.reduce((a, r) => a + r.count, 0) + floodDl.length, FLOOD, 'every flood record is a row or a dead letter');
  t.ok(floodDl.every((m) => /^\{"metric":\{"name":"flood\.series"/.test(m.value?.toString() ?? '')), 'flood dead letters carry the original record');

  // Accounting: every consumed record in exactly one place.
  const inRows = rows.reduce((a, r) => a + r.count, 0);
  const replayed = e.metric('streamstats_replayed_records_total');
  t.equal(e.sum('streamstats_records_total'), records, `the engine counted every record produced (${records})`);
  t.equal(inRows + dl.length + replayed, records, `rows (${inRows}) + dead letters (${dl.length}) + replay-skipped (${replayed}) = records consumed (${records})`);
  t.equal(e.deadLetters().length, 0, 'nothing went to the file dead-letter output');
  await e.stop();
});
