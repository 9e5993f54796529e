// Against a real Kafka broker (KAFKA_BROKERS; npm test starts one): the Kafka statistics sink in both
// modes (rows keyed by identity; rows and input offsets in one transaction, aborts invisible to
// read_committed readers, zombie fencing) and the Kafka dead-letter output.
import type { IHeaders } from 'kafkajs';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { KafkaDeadLetter, DLQ_HEADERS } from '../../src/sinks/dead-letter-kafka.js';
import type { DeadLetterEntry as KafkaDeadLetterEntry } from '../../src/sinks/dead-letter.js';
import type { SinkCommit } from '../../src/sinks/index.js';
import { isFencingError } from '../../src/kafka/errors.js';
import { KafkaSink, rowIdentityKey, type KafkaSinkOptions } from '../../src/sinks/kafka/index.js';
import { StreamstatsError } from '../../src/errors.js';
import { producibleCompressions, zstdAvailable } from '../../src/kafka/compression.js';
import type { RowBatch, StatsRow } from '../../src/windows/row.js';
import { brokers, client, createTopic, uid } from '../fixtures/kafka.js';
// After the modules above: src/kafka/client.ts has put our produce path in kafkajs's cache by now.
import { Kafka, logLevel } from 'kafkajs';

const logger = pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' });

function row(i: number, where?: { topic: string; partition: number }, periodStart = '2020-02-11T12:42:00.000Z'): StatsRow {
  const r: StatsRow = {
    name: `cpu.idle_perc.${i % 7}`,
    unit: i % 2 === 0 ? 'percent' : null,
    // Insertion order is not sorted: the key sorts it.
    groupby: { service: 'monitoring', hostname: `host-${i}`, az: i % 3 === 0 ? null : 'nova' },
    count: i + 1,
    sum: i * 1.5,
    min: 0,
    max: i * 1.5,
    avg: (i * 1.5) / (i + 1),
    stddev: 0.25,
    duration_start: '2020-02-11T12:42:13.000Z',
    duration_end: '2020-02-11T12:42:43.000Z',
    duration: 30,
    period: 60,
    period_start: periodStart,
    period_end: new Date(Date.parse(periodStart) + 60_000).toISOString(),
  };
  if (where !== undefined) {
    r.topic = where.topic;
    r.partition = where.partition;
  }
  return r;
}

function batchOf(rows: StatsRow[]): RowBatch {
  return { rows, ndjson: () => rows.map((r) => `${JSON.stringify(r)}\n`).join('') };
}

function rowsFor(n: number, from: number, where?: { topic: string; partition: number }): RowBatch {
  return batchOf(Array.from({ length: n }, (_, i) => row(from + i, where)));
}

function commitFor(topic: string, partition: number, position: number): SinkCommit {
  return { topic, partition, point: { position, watermarkMs: 1_581_425_000_000 + position, appliedEnd: position + 5 } };
}

function sink(t: Test, opts: Partial<KafkaSinkOptions> & { topic: string }): KafkaSink {
  const s = new KafkaSink({ kafka: client(), exactlyOnce: false, groupId: uid('g'), logger, ...opts });
  t.teardown(() => s.close());
  return s;
}

interface Received {
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: IHeaders;
}

/**
 * Reads a topic from the beginning with a fresh group until `until` holds, then `settleMs` more to
 * catch extra (duplicate) messages; gives up after timeoutMs and returns what it has.
 */
async function readTopic(
  topic: string,
  opts: { until: (got: readonly Received[]) => boolean; readUncommitted?: boolean; settleMs?: number; timeoutMs?: number },
): Promise<Received[]> {
  const consumer = client().consumer({ groupId: uid('reader'), readUncommitted: opts.readUncommitted ?? false, maxWaitTimeInMs: 100 });
  const got: Received[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    let done: () => void = () => {};
    const reached = new Promise<void>((resolve) => (done = resolve));
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        got.push({ partition, offset: message.offset, key: message.key, value: message.value, headers: message.headers ?? {} });
        if (opts.until(got)) done();
      },
    });
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, opts.timeoutMs ?? 20_000).unref());
    await Promise.race([reached, timeout]);
    await new Promise((r) => setTimeout(r, opts.settleMs ?? 1000));
  } finally {
    await consumer.disconnect();
  }
  return got;
}

const atLeast = (n: number) => (got: readonly Received[]) => got.length >= n;

async function committedOffsets(groupId: string, topic: string) {
  const admin = client().admin();
  await admin.connect();
  try {
    const [res] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return new Map((res?.partitions ?? []).map((p) => [p.partition, { offset: p.offset, metadata: p.metadata }]));
  } finally {
    await admin.disconnect();
  }
}

const parsed = (got: readonly Received[]) => got.map((m) => JSON.parse(m.value!.toString('utf8')) as StatsRow);

/**
 * A client whose producers' first transaction fails once: in sendOffsets (as a broker rejecting
 * TxnOffsetCommit would), or in its second send, after a first request of rows was written. The sink
 * must abort, and none of the transaction's rows may be visible to read_committed readers.
 */
function failingTransactionOnce(real: Kafka, where: 'offsets' | 'second send'): Kafka {
  let failed = false;
  const wrapped = Object.create(real) as Kafka;
  wrapped.producer = (cfg) => {
    const p = real.producer(cfg);
    const transaction = p.transaction.bind(p);
    p.transaction = async () => {
      const tx = await transaction();
      if (where === 'offsets') {
        const sendOffsets = tx.sendOffsets.bind(tx);
        tx.sendOffsets = async (o) => {
          if (failed) return sendOffsets(o);
          failed = true;
          throw new Error('injected TxnOffsetCommit failure');
        };
      } else {
        const send = tx.send.bind(tx);
        let sends = 0;
        tx.send = async (r) => {
          if (failed || ++sends < 2) return send(r);
          failed = true;
          throw new Error('injected failure of a send');
        };
      }
      return tx;
    };
    return p;
  };
  return wrapped;
}

t.test('at-least-once: rows keyed by identity, read back equal, one identity in one partition', async (t) => {
  const out = await createTopic(t, 3);
  const s = sink(t, { topic: out, compression: 'lz4' });
  const rows = [...rowsFor(20, 0, { topic: 'metrics', partition: 2 }).rows, ...rowsFor(5, 100).rows];
  await s.write(batchOf(rows));
  await s.write(batchOf(rows)); // the same identities again: upserts land next to the first copies
  const got = await readTopic(out, { until: atLeast(2 * rows.length), readUncommitted: true, settleMs: 300 });
  t.equal(got.length, 2 * rows.length, 'every row, twice');
  const byKey = new Map<string, Received[]>();
  for (const m of got) {
    const k = m.key!.toString('utf8');
    byKey.set(k, [...(byKey.get(k) ?? []), m]);
  }
  t.equal(byKey.size, rows.length, 'one key per row identity');
  for (const r of rows) {
    const ms = byKey.get(rowIdentityKey(r)) ?? [];
    t.equal(ms.length, 2, `both copies of ${rowIdentityKey(r)}`);
    t.same(ms.map((m) => JSON.parse(m.value!.toString('utf8'))), [r, r], 'value is the row JSON');
    t.equal(new Set(ms.map((m) => m.partition)).size, 1, 'an identity stays in one partition');
  }
  t.same(JSON.parse(rowIdentityKey(rows[0]!)), ['metrics', 2, 'cpu.idle_perc.0', [['az', null], ['hostname', 'host-0'], ['service', 'monitoring']], '2020-02-11T12:42:00.000Z'], 'the documented key layout');
  t.same(JSON.parse(rowIdentityKey(rows[20]!))[0], null, 'unpartitioned source: topic null');
  t.ok(new Set(got.map((m) => m.partition)).size > 1, 'keys spread over the partitions');
});

t.test('exactly-once: rows and the input offset (with its metadata) commit together, exactly once', async (t) => {
  const [input, out] = await Promise.all([createTopic(t, 2), createTopic(t, 2)]);
  const groupId = uid('g');
  const s = sink(t, { topic: out, exactlyOnce: true, groupId });
  const b0 = rowsFor(30, 0, { topic: input, partition: 0 });
  const b1 = rowsFor(10, 30, { topic: input, partition: 1 });
  await Promise.all([s.write(b0, commitFor(input, 0, 42)), s.write(b1, commitFor(input, 1, 7))]);
  await s.write(batchOf([]), commitFor(input, 1, 9)); // no rows: just the offset, in its own transaction

  const got = await readTopic(out, { until: atLeast(40) });
  t.equal(got.length, 40, 'a read_committed reader sees every row once');
  t.same(new Set(got.map((m) => m.key!.toString())), new Set([...b0.rows, ...b1.rows].map(rowIdentityKey)), 'all identities');
  const want = new Map([...b0.rows, ...b1.rows].map((r) => [rowIdentityKey(r), r]));
  t.ok(parsed(got).every((r) => JSON.stringify(r) === JSON.stringify(want.get(rowIdentityKey(r)))), 'values equal the rows');

  const offsets = await committedOffsets(groupId, input);
  t.same(offsets.get(0), { offset: '42', metadata: JSON.stringify({ v: 1, wm: 1_581_425_000_042, hi: 47 }) }, 'partition 0: offset and metadata committed with the rows');
  t.same(offsets.get(1), { offset: '9', metadata: JSON.stringify({ v: 1, wm: 1_581_425_000_009, hi: 14 }) }, 'partition 1: the later offset-only transaction');

  const fresh = sink(t, { topic: out, exactlyOnce: true, groupId });
  const pos = await fresh.readPositions(input, [0, 1]);
  t.same(Object.fromEntries(pos), {
    0: { position: 42, watermarkMs: 1_581_425_000_042, appliedEnd: 47 },
    1: { position: 9, watermarkMs: 1_581_425_000_009, appliedEnd: 14 },
  }, 'readPositions gives back what the Kafka source restores from');
});

t.test('exactly-once: back-to-back transactions with offsets do not fail with CONCURRENT_TRANSACTIONS (kafkajs#430)', async (t) => {
  const [input, out] = await Promise.all([createTopic(t, 1), createTopic(t, 1)]);
  const groupId = uid('g');
  const s = sink(t, { topic: out, exactlyOnce: true, groupId });
  // Offsets-only transactions are the quickest to follow one another: AddOffsetsToTxn comes first,
  // while the coordinator may still be completing the previous commit.
  for (let i = 1; i <= 15; i++) await s.write(i % 3 === 0 ? rowsFor(1, i, { topic: input, partition: 0 }) : batchOf([]), commitFor(input, 0, i));
  t.equal((await committedOffsets(groupId, input)).get(0)?.offset, '15', 'every transaction committed');
});

t.test('exactly-once: back-to-back transactions of rows: no send waits out CONCURRENT_TRANSACTIONS in kafkajs\'s 300 ms retry', async (t) => {
  const [input, out] = await Promise.all([createTopic(t, 1), createTopic(t, 3)]);
  const groupId = uid('g');
  const logged: string[] = [];
  const kafka = new Kafka({
    clientId: 'streamstats-test',
    brokers: brokers(),
    logLevel: logLevel.WARN,
    logCreator: () => (e) => void logged.push(`${e.log.message} ${String(e.log['error'] ?? '')}`),
  });
  const s = sink(t, { topic: out, exactlyOnce: true, groupId, kafka });
  const n = 12;
  for (let i = 1; i <= n; i++) await s.write(rowsFor(40, i * 40, { topic: input, partition: 0 }), commitFor(input, 0, i));
  const retried = logged.filter((l) => /Failed to send messages|AddPartitionsToTxn/.test(l));
  t.same(retried, [], 'no send of a transaction met the previous commit still completing');
  t.equal((await committedOffsets(groupId, input)).get(0)?.offset, String(n), 'every transaction committed');
  const got = await readTopic(out, { until: atLeast(40 * n), settleMs: 300 });
  t.equal(got.length, 40 * n, 'every row once, read committed');
});

for (const where of ['offsets', 'second send'] as const) {
  t.test(`exactly-once: a transaction that fails in its ${where} is aborted, and read_committed readers never see its rows`, async (t) => {
    const [input, out] = await Promise.all([createTopic(t, 1), createTopic(t, 1)]);
    const groupId = uid('g');
    // Requests of two or three rows: the transaction's rows go in several.
    const s = sink(t, { kafka: failingTransactionOnce(client(), where), topic: out, exactlyOnce: true, groupId, maxRequestBytes: 1500 });
    const doomed = rowsFor(8, 0, { topic: input, partition: 0 });
    const err = await s.write(doomed, commitFor(input, 0, 10)).then(() => null, (e: unknown) => e);
    t.type(err, StreamstatsError);
    t.match((err as StreamstatsError).message, new RegExp(`transaction for .*/0 aborted: 8 rows .*: injected ${where === 'offsets' ? 'TxnOffsetCommit failure' : 'failure of a send'}`));
    t.equal((err as StreamstatsError).canRetry, true, 'aborted before commit: retrying is safe');

    const kept = rowsFor(3, 50, { topic: input, partition: 0 });
    await s.write(kept, commitFor(input, 0, 20));
    const keptKeys = new Set(kept.rows.map(rowIdentityKey));
    const doomedKeys = new Set(doomed.rows.map(rowIdentityKey));
    // One output partition: once the later committed rows are read, everything before them was too.
    const written = where === 'offsets' ? 0 : 2;
    const [committed, uncommitted] = await Promise.all([
      readTopic(out, { until: atLeast(3), settleMs: 300 }),
      readTopic(out, { until: atLeast(3 + written), readUncommitted: true, settleMs: 300 }),
    ]);
    t.same(committed.map((m) => m.key!.toString()).sort(), [...keptKeys].sort(), 'read_committed: only the committed rows');
    const doomedWritten = uncommitted.filter((m) => doomedKeys.has(m.key!.toString())).length;
    if (where === 'offsets') t.equal(doomedWritten, 0, 'read_uncommitted: no row was sent (the offset goes first)');
    else t.ok(doomedWritten >= 2 && doomedWritten < 8, `read_uncommitted: ${doomedWritten} aborted rows were written (so the abort hid them)`);
    const offsets = await committedOffsets(groupId, input);
    t.equal(offsets.get(0)?.offset, '20', 'only the committed transaction moved the offset');
  });
}

t.test('exactly-once: a newer owner of an input partition fences the older one', async (t) => {
  const [input, out] = await Promise.all([createTopic(t, 1), createTopic(t, 1)]);
  const groupId = uid('g');
  const a = sink(t, { topic: out, exactlyOnce: true, groupId });
  const b = sink(t, { topic: out, exactlyOnce: true, groupId });
  const c = sink(t, { topic: out, exactlyOnce: true, groupId });
  const b1 = rowsFor(2, 0, { topic: input, partition: 0 });
  const b2 = rowsFor(2, 10, { topic: input, partition: 0 });
  const b3 = rowsFor(2, 20, { topic: input, partition: 0 });
  const b4 = rowsFor(2, 30, { topic: input, partition: 0 });
  const b5 = rowsFor(2, 40, { topic: input, partition: 0 });

  await a.write(b1, commitFor(input, 0, 10));
  await b.write(b2, commitFor(input, 0, 20)); // b's first write creates its producer: a is fenced
  const errA = await a.write(b3, commitFor(input, 0, 30)).then(() => null, (e: unknown) => e);
  t.ok(errA instanceof StreamstatsError && isFencingError(errA), 'the older owner fails with a fencing error');
  t.match((errA as Error).message, /fenced for .*\/0: a newer producer with transactionalId .* took over/);
  t.match(String(((errA as Error).cause as Error).message), /epoch|fenced/i, 'kafkajs reports INVALID_PRODUCER_EPOCH or PRODUCER_FENCED');
  t.equal((errA as StreamstatsError).canRetry, false);

  // c claims the partition the way the source does on assignment: before reading the offsets.
  const pos = await c.readPositions(input, [0]);
  t.same(pos.get(0), { position: 20, watermarkMs: 1_581_425_000_020, appliedEnd: 25 }, 'the claim reads the last committed position');
  const errB = await b.write(b4, commitFor(input, 0, 40)).then(() => null, (e: unknown) => e);
  t.ok(isFencingError(errB), 'readPositions fenced the previous owner');
  await c.write(b5, commitFor(input, 0, 50));

  const got = await readTopic(out, { until: (g) => g.some((m) => m.key!.toString() === rowIdentityKey(b5.rows[1]!)), settleMs: 300 });
  t.same(got.map((m) => m.key!.toString()), [...b1.rows, ...b2.rows, ...b5.rows].map(rowIdentityKey), 'only the owners\' rows, in order');
  t.equal((await committedOffsets(groupId, input)).get(0)?.offset, '50');
});

t.test('dead letters: original key and value bytes, and the headers', async (t) => {
  const dlq = await createTopic(t, 2);
  const d = new KafkaDeadLetter({ kafka: client(), topic: dlq, logger, compression: 'gzip' });
  t.teardown(() => d.close());
  const invalidUtf8 = Buffer.from([0x7b, 0xff, 0xfe, 0x22, 0x61, 0x80]);
  const binaryKey = Buffer.from([0x00, 0xc3, 0x28, 0xff]);
  const base = { time: '2024-05-01T10:00:00.000Z', batch_seq: 3, message_index: 0 };
  const entries: KafkaDeadLetterEntry[] = [
    { ...base, reason: 'malformed_json', detail: 'unexpected token at 7', source: 'kafka:metrics', partition: 4, offset: '1234', element: -1, value: '{"metric": nope', value_encoding: 'utf8', key: Buffer.from('cpu|agent_1').toString('base64') },
    { ...base, reason: 'invalid_utf8', detail: 'byte 1', source: 'kafka:metrics', partition: 4, offset: '1235', element: -1, value: invalidUtf8.toString('base64'), value_encoding: 'base64', key: binaryKey.toString('base64') },
    { ...base, reason: 'missing_field', detail: 'metric.name is missing', source: 'kafka:a,b', partition: 9, offset: '77', element: 2, value: '{"x":1}', value_encoding: 'utf8', topic: 'b', kafka_partition: 1 },
    { ...base, reason: 'empty_message', detail: 'empty value', source: 'kafka:a,b', partition: 9, offset: '78', element: -1, value: '', value_encoding: 'utf8' },
    { ...base, reason: 'late', detail: 'window closed', source: 'file:/tmp/x.ndjson', partition: 0, element: -1, value: 'ünïcödé {"a":1}', value_encoding: 'utf8' },
  ];
  await d.write(entries);
  const got = await readTopic(dlq, { until: atLeast(entries.length), readUncommitted: true, settleMs: 300 });
  t.equal(got.length, entries.length);
  const h = (m: Received) => Object.fromEntries(Object.entries(m.headers).map(([k, v]) => [k, String(v)]));
  const find = (reason: string) => got.find((m) => String(m.headers[DLQ_HEADERS.reason]) === reason)!;

  const m0 = find('malformed_json');
  t.same(m0.key, Buffer.from('cpu|agent_1'));
  t.same(m0.value, Buffer.from('{"metric": nope'));
  t.same(h(m0), {
    'streamstats-reason': 'malformed_json', 'streamstats-detail': 'unexpected token at 7', 'streamstats-source': 'kafka:metrics',
    'streamstats-source-topic': 'metrics', 'streamstats-source-offset': '1234', 'streamstats-time': '2024-05-01T10:00:00.000Z',
  }, 'one-topic source: the topic is parsed from it; no Kafka partition without kafka_partition; no element for a whole message');

  const m1 = find('invalid_utf8');
  t.ok(m1.key!.equals(binaryKey), 'binary key bytes kept');
  t.ok(m1.value!.equals(invalidUtf8), 'invalid UTF-8 value bytes kept');

  const m2 = find('missing_field');
  t.same(m2.key, null, 'no key stays no key');
  t.same(h(m2), {
    'streamstats-reason': 'missing_field', 'streamstats-detail': 'metric.name is missing', 'streamstats-source': 'kafka:a,b',
    'streamstats-source-topic': 'b', 'streamstats-source-partition': '1', 'streamstats-source-offset': '77',
    'streamstats-element': '2', 'streamstats-time': '2024-05-01T10:00:00.000Z',
  }, 'entry.topic and entry.kafka_partition win; element index when >= 0');

  const m3 = find('empty_message');
  t.equal(m3.value?.length, 0, 'an empty value stays an empty (not null) value');
  t.notOk(DLQ_HEADERS.sourceTopic in m3.headers, 'two-topic source and no entry.topic: no topic header');

  const m4 = find('late');
  t.same(m4.value, Buffer.from('ünïcödé {"a":1}'));
  t.notOk(DLQ_HEADERS.sourceOffset in m4.headers, 'no offset header for a source without offsets');
});

/** A topic whose max.message.bytes is lowered after the sink read it: the broker itself refuses the big row. */
async function shrinkingTopic(t: Test): Promise<{ topic: string; shrink: () => Promise<void> }> {
  const topic = uid('ss-shrink');
  const admin = client().admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 2, configEntries: [{ name: 'max.message.bytes', value: '200000' }] }], waitForLeaders: true });
  t.teardown(async () => {
    await admin.deleteTopics({ topics: [topic] }).catch(() => {});
    await admin.disconnect();
  });
  return {
    topic,
    shrink: async () => {
      await admin.alterConfigs({ validateOnly: false, resources: [{ type: 2, name: topic, configEntries: [{ name: 'max.message.bytes', value: '4000' }] }] });
      // The broker applies a topic config change asynchronously.
      await new Promise((r) => setTimeout(r, 1500));
    },
  };
}

function bigRow(i: number, where: { topic: string; partition: number }): StatsRow {
  const r = row(i, where);
  r.groupby = { ...r.groupby, blob: 'b'.repeat(6000) };
  return r;
}

for (const exactlyOnce of [false, true]) {
  t.test(`${exactlyOnce ? 'exactly-once' : 'at-least-once'}: a row the broker refuses (MESSAGE_TOO_LARGE) is returned as rejected once the limit is read again; the rest and the offset are written`, async (t) => {
    const input = await createTopic(t, 1);
    const { topic: out, shrink } = await shrinkingTopic(t);
    const groupId = uid('g');
    const s = sink(t, { topic: out, exactlyOnce, groupId });
    const where = { topic: input, partition: 0 };
    t.same(await s.write(rowsFor(2, 0, where), commitFor(input, 0, 5)), { rejected: [] }, 'the first write reads the topic\'s limit (200,000)');
    await shrink();
    const rows = [...rowsFor(6, 10, where).rows];
    rows.splice(3, 0, bigRow(99, where));
    const res = await s.write(batchOf(rows), commitFor(input, 0, 9));
    t.same(res.rejected.map((r) => r.index), [3], 'only the big row is rejected');
    t.match(res.rejected[0]?.detail, /refused the row \(MESSAGE_TOO_LARGE\): \d+ bytes .* over max\.message\.bytes=4000/);
    const want = [...rowsFor(2, 0, where).rows, ...rows.filter((_, i) => i !== 3)].map(rowIdentityKey).sort();
    const got = await readTopic(out, { until: atLeast(want.length), settleMs: 300 });
    t.same([...new Set(got.map((m) => m.key!.toString()))].sort(), want, 'every other row arrived');
    if (exactlyOnce) {
      t.equal(got.length, want.length, 'read_committed: the refused transaction left nothing visible');
      t.equal((await committedOffsets(groupId, input)).get(0)?.offset, '9', 'the offset was committed with the rest');
    }
  });
}

t.test('a 600 KB row key goes through the sink (the partitioner is linear in the key)', async (t) => {
  const input = await createTopic(t, 1);
  const out = await createTopic(t, 3);
  const s = sink(t, { topic: out });
  const r = row(1, { topic: input, partition: 0 });
  r.groupby = { ...r.groupby, huge: 'h'.repeat(300 * 1024) };
  // key + value each carry the 300 KB value: ~600 KB of key and value, under the 1 MiB default.
  t.same(await s.write(batchOf([r])), { rejected: [] });
  const got = await readTopic(out, { until: atLeast(1) });
  t.equal(got[0]?.key?.length, Buffer.byteLength(rowIdentityKey(r)));
});

t.test('dead letters too large for the dead-letter topic are cut to fit and flagged, never refused', async (t) => {
  const dlq = await createTopic(t, 1);
  const d = new KafkaDeadLetter({ kafka: client(), topic: dlq, logger });
  t.teardown(() => d.close());
  // Just under the input topic's 1 MiB limit: with the headers added it would be over the DLQ topic's.
  const value = `{"metric":${'9'.repeat(1_048_000)}`;
  const detail = `malformed JSON: ${'x'.repeat(20_000)}`;
  const base = { time: '2024-05-01T10:00:00.000Z', batch_seq: 0, message_index: 0, element: -1, source: 'kafka:metrics', partition: 0, value_encoding: 'utf8' as const };
  await d.write([
    { ...base, reason: 'malformed_json', detail, offset: '1', value },
    { ...base, reason: 'malformed_json', detail: 'small', offset: '2', value: '{"x"' },
  ]);
  const got = await readTopic(dlq, { until: atLeast(2), readUncommitted: true, settleMs: 300 });
  t.equal(got.length, 2, 'both dead letters were written');
  const big = got.find((m) => String(m.headers[DLQ_HEADERS.sourceOffset]) === '1')!;
  t.equal(String(big.headers[DLQ_HEADERS.truncated]), String(Buffer.byteLength(value)), 'flagged with the original size');
  t.ok(big.value!.length > 900_000 && big.value!.length < Buffer.byteLength(value), `the first bytes are kept (${big.value!.length})`);
  t.ok(value.startsWith(big.value!.toString()), 'a prefix of the original');
  t.ok(String(big.headers[DLQ_HEADERS.detail]).length < 2000, 'the detail header was shortened');
  const small = got.find((m) => String(m.headers[DLQ_HEADERS.sourceOffset]) === '2')!;
  t.notOk(DLQ_HEADERS.truncated in small.headers, 'a dead letter that fits is not flagged');
});

t.test('every output compression this runtime can produce round-trips through the broker', async (t) => {
  const input = await createTopic(t, 1);
  for (const compression of producibleCompressions()) {
    const out = await createTopic(t, 1);
    const s = sink(t, { topic: out, compression });
    const b = rowsFor(20, 0, { topic: input, partition: 0 });
    await s.write(b);
    const got = await readTopic(out, { until: atLeast(20) });
    t.same(got.map((m) => m.key!.toString()), b.rows.map(rowIdentityKey), `${compression}: all rows, in order`);
  }
  t.ok(producibleCompressions().includes('zstd') === zstdAvailable(), 'zstd is offered exactly where node:zlib has it');
});
