// The producer plumbing of src/kafka and the statistics sink's lanes, without a broker: the one
// compression table, the topic-name rule, request cutting, error classification, the retries, the
// once-more-without-the-oversize-records send and the grouping of queued writes.
import kafkajs from 'kafkajs';
import { pino } from 'pino';
import t from 'tap';
import { StreamstatsError } from '../../src/errors.js';
import { compressionCode, compressionRefusal, KAFKA_COMPRESSIONS, producibleCompressions } from '../../src/kafka/compression.js';
import { isConcurrentTransactions, isFencingError, rowLevelRefusal } from '../../src/kafka/errors.js';
import { validateProducerOptions } from '../../src/kafka/producer.js';
import { RecordsRefused, sendRefusingOversize } from '../../src/kafka/refusals.js';
import { chunkMessages, messageBytes, RECORD_OVERHEAD_BYTES } from '../../src/kafka/requests.js';
import { BROKER_DEFAULT_MAX_MESSAGE_BYTES, TOPIC_NAME_PATTERN, TopicLimits, validTopicName } from '../../src/kafka/topics.js';
import { retryConcurrentTransactions } from '../../src/kafka/transactions.js';
import { Lanes, type QueuedWrite } from '../../src/sinks/kafka/lanes.js';
import type { RowRejection } from '../../src/sinks/types.js';

const logger = pino({ level: 'silent' });

t.test('the compression table: a name\'s index is kafkajs\'s codec id, and only producible names pass', async (t) => {
  const ids: Record<string, number> = {
    none: kafkajs.CompressionTypes.None,
    gzip: kafkajs.CompressionTypes.GZIP,
    snappy: kafkajs.CompressionTypes.Snappy,
    lz4: kafkajs.CompressionTypes.LZ4,
    zstd: kafkajs.CompressionTypes.ZSTD,
  };
  t.same([...KAFKA_COMPRESSIONS].sort(), Object.keys(ids).sort(), 'every kafkajs codec is in the table');
  for (const c of KAFKA_COMPRESSIONS) t.equal(compressionCode(c), ids[c], `${c} -> ${ids[c]}`);
  for (const c of producibleCompressions()) t.equal(compressionRefusal(c), null, `${c} is producible`);
  t.match(compressionRefusal('brotli'), /^one of none, gzip, snappy, lz4/);
});

t.test('topic names: Kafka\'s rule, one pattern', async (t) => {
  for (const ok of ['metrics', 'a.b_c-D9', 'x'.repeat(249)]) t.ok(validTopicName(ok), `${ok.slice(0, 20)} is valid`);
  for (const bad of ['', 'a b', 'a/b', 'ü', 'x'.repeat(250)]) t.notOk(validTopicName(bad), `${JSON.stringify(bad.slice(0, 20))} is not`);
  t.equal(validTopicName('a:b'), TOPIC_NAME_PATTERN.test('a:b'));
  t.throws(() => validateProducerOptions({ topic: 'a b' }), { code: 'STREAMSTATS_CONFIG', message: /topic \("a b"\) is not valid: a topic name of letters/ });
  t.throws(() => validateProducerOptions({ topic: 'ok', closeTimeoutMs: -1 }), { message: /closeTimeoutMs \(-1\) is not valid: a number of milliseconds >= 0/ });
});

t.test('requests are cut per partition by key and value bytes plus the record overhead', async (t) => {
  const m = (partition: number | undefined, bytes: number) => ({ key: null, value: Buffer.alloc(bytes), ...(partition === undefined ? {} : { partition }) });
  // 3 x 400 on partition 0 with a budget of 1000 (100 overhead each): two fit, the third starts a new request.
  const cut = chunkMessages([m(0, 400), m(1, 900), m(0, 400), m(0, 400)], 1000, 100);
  t.same(cut.map((c) => c.map((x) => x.partition)), [[0, 1, 0], [0]], 'partition 1 has its own budget');
  t.same(chunkMessages([m(undefined, 5000), m(undefined, 10)], 1000).map((c) => c.length), [1, 1], 'a message over the budget goes alone');
  t.same(chunkMessages([], 1000), [], 'nothing to send');
  // Regression: a dead letter cut to the topic's limit counts its headers, so a small one before it
  // does not share its record batch (the broker refused the pair with MESSAGE_TOO_LARGE).
  const headers = { 'streamstats-reason': 'malformed_json', 'streamstats-detail': 'd'.repeat(300) };
  t.equal(messageBytes({ key: 'k', value: 'vv', headers }), 1 + 2 + (18 + 14 + 8) + (18 + 300 + 8), 'key, value, and each header with its name and framing');
  t.same(chunkMessages([{ key: null, value: 'x' }, { key: null, value: Buffer.alloc(600), headers }], 1000, 100).map((c) => c.length), [1, 1], 'headers count');
  t.ok(RECORD_OVERHEAD_BYTES > 0);
});

t.test('producer errors are read along the cause chain', async (t) => {
  const wrap = (inner: object) => ({ name: 'KafkaJSNumberOfRetriesExceeded', cause: { originalError: inner } });
  t.ok(isFencingError(wrap({ type: 'INVALID_PRODUCER_EPOCH' })));
  t.ok(isFencingError(new StreamstatsError('STREAMSTATS_SINK', 'x', { cause: { code: 90 } })), 'PRODUCER_FENCED by code');
  t.notOk(isFencingError(wrap({ type: 'NOT_LEADER_FOR_PARTITION' })));
  t.equal(rowLevelRefusal(wrap({ type: 'MESSAGE_TOO_LARGE' })), 'MESSAGE_TOO_LARGE');
  t.equal(rowLevelRefusal({ code: 87 }), 'error code 87');
  t.equal(rowLevelRefusal(new Error('connection closed')), null);
  t.ok(isConcurrentTransactions({ type: 'CONCURRENT_TRANSACTIONS' }));
  t.notOk(isConcurrentTransactions(null));
});

t.test('CONCURRENT_TRANSACTIONS is retried until the deadline; any other error at once', async (t) => {
  let calls = 0;
  t.equal(await retryConcurrentTransactions(async () => {
    if (++calls < 3) throw Object.assign(new Error('busy'), { type: 'CONCURRENT_TRANSACTIONS' });
    return 'ok';
  }), 'ok');
  t.equal(calls, 3, 'two retries, then success');

  calls = 0;
  await t.rejects(retryConcurrentTransactions(async () => {
    calls++;
    throw new Error('denied');
  }), /denied/);
  t.equal(calls, 1, 'not retried');

  calls = 0;
  const started = Date.now();
  await t.rejects(retryConcurrentTransactions(async () => {
    calls++;
    throw Object.assign(new Error('still busy'), { code: 51 });
  }, 300), /still busy/);
  t.ok(calls > 1 && Date.now() - started < 2000, `retried ${calls} times, stopped at the deadline`);
});

/** Limits whose re-read reports a lower max.message.bytes, as after the topic's config was lowered. */
class LoweredLimits extends TopicLimits {
  reads = 0;
  constructor(private readonly lowered: number) {
    super({ topic: 't', admin: () => Promise.reject(new Error('not used')), logger, withPartitions: false });
  }

  override read(refresh = false): Promise<void> {
    if (refresh) {
      this.reads++;
      this.maxMessageBytes = this.lowered;
    }
    return Promise.resolve();
  }
}

const refusal = (sent: number) => new RecordsRefused('MESSAGE_TOO_LARGE', new StreamstatsError('STREAMSTATS_SINK', 'refused', { canRetry: true }), sent);

t.test('a refused send: the limit is read again, the unsent records now over it are set aside, the rest sent once more', async (t) => {
  const items = [{ size: 10 }, { size: 5000 }, { size: 20 }, { size: 6000 }];
  const limits = new LoweredLimits(1000);
  const sends: number[][] = [];
  const refused: Array<[number, string, number]> = [];
  await sendRefusingOversize(items, limits, async (xs) => {
    sends.push(xs.map((x) => x.size));
    if (sends.length === 1) throw refusal(1);
  }, (x, why, max) => refused.push([x.size, why, max]));
  t.same(sends, [[10, 5000, 20, 6000], [20]], 'the first item was written; the second send holds the rest that fits');
  t.same(refused, [[5000, 'MESSAGE_TOO_LARGE', 1000], [6000, 'MESSAGE_TOO_LARGE', 1000]]);
  t.equal(limits.reads, 1);
  t.equal(limits.maxMessageBytes, 1000);
});

t.test('a refusal no record explains, a second refusal, or another error: the write fails', async (t) => {
  const unexplained = new LoweredLimits(BROKER_DEFAULT_MAX_MESSAGE_BYTES);
  let sends = 0;
  await t.rejects(sendRefusingOversize([{ size: 10 }], unexplained, async () => {
    sends++;
    throw refusal(0);
  }, () => t.fail('nothing is over the limit')), { message: 'refused', code: 'STREAMSTATS_SINK' });
  t.equal(sends, 1, 'not sent again when nothing was set aside');

  sends = 0;
  await t.rejects(sendRefusingOversize([{ size: 10 }, { size: 5000 }], new LoweredLimits(1000), async () => {
    sends++;
    throw refusal(0);
  }, () => {}), { message: 'refused' });
  t.equal(sends, 2, 'retried once only');

  sends = 0;
  await t.rejects(sendRefusingOversize([{ size: 10 }], new LoweredLimits(1000), async () => {
    sends++;
    throw new Error('connection lost');
  }, () => {}), /connection lost/);
  t.equal(sends, 1);
});

t.test('lanes: writes queued while a group runs go out together (bounded by bytes), in call order', async (t) => {
  const groups: Array<{ lane: string; bytes: number[] }> = [];
  let release: () => void = () => {};
  let after = 0;
  const lanes = new Lanes(
    250,
    async (lane, group) => {
      groups.push({ lane, bytes: group.map((w) => w.bytes) });
      if (groups.length === 1) await new Promise<void>((r) => (release = r));
      const refused = new Map<QueuedWrite, RowRejection[]>();
      const last = group.at(-1)!;
      refused.set(last, [{ index: 0, detail: 'refused by the broker' }]);
      return refused;
    },
    () => after++,
  );
  const rows = (bytes: number) => ({ messages: [], rowIndex: [], sizes: [], bytes, rejected: [{ index: 1, detail: 'too big up front' }] });
  const first = lanes.enqueue('a', rows(100), 2, undefined);
  const queued = [lanes.enqueue('a', rows(100), 2, undefined), lanes.enqueue('a', rows(100), 2, undefined), lanes.enqueue('a', rows(100), 2, undefined)];
  const other = lanes.enqueue('b', rows(50), 2, undefined);
  await new Promise((r) => setImmediate(r));
  release();
  const results = await Promise.all([first, ...queued, other]);
  t.same(groups, [
    { lane: 'a', bytes: [100] },
    { lane: 'b', bytes: [50] },
    { lane: 'a', bytes: [100, 100] },
    { lane: 'a', bytes: [100] },
  ], 'lane b does not wait for lane a; what queued meanwhile goes out together, up to 250 bytes');
  t.same(results[0]!.rejected.map((r) => r.index), [0, 1], 'refusals of both kinds, sorted by row');
  t.same(results[1]!.rejected.map((r) => r.index), [1], 'only the last write of a group got the broker refusal here');
  t.equal(after, 4, 'called after each group');
});

t.test('lanes: a failed group rejects each of its writes; the lane goes on', async (t) => {
  let n = 0;
  const lanes = new Lanes(1 << 20, async () => {
    if (n++ === 0) throw new Error('broker gone');
    return new Map();
  }, () => {});
  const rows = { messages: [], rowIndex: [], sizes: [], bytes: 1, rejected: [] };
  await t.rejects(lanes.enqueue('a', rows, 1, undefined), /broker gone/);
  t.same(await lanes.enqueue('a', rows, 1, undefined), { rejected: [] });
});
