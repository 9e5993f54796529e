// Hostile entries on a Redis stream: no REDIS_FIELD, NUL and lone surrogates, invalid UTF-8, empty,
// malformed, and values of megabytes. Each is dead-lettered with its reason, the stream goes on,
// every entry is acknowledged, and the good statements still give the reference statistics.
import t from 'tap';
import { rowKey } from '../fixtures/harness.js';
import { close } from '../fixtures/reference.js';
import { waitFor } from '../fixtures/kafka.js';
import { expectedRows, freshStream, startRedisEngine, statements, xadd } from '../fixtures/redis.js';

t.test('hostile entries are dead-lettered with their reason; the good ones give the reference rows', async (t) => {
  const { stream, group, redis } = await freshStream(t);
  const good = statements({ count: 3000, seed: 9 });
  const template = JSON.parse(good[0]!.json) as { actor: unknown; verb: { id: string } };
  const hostile: Array<{ value: string | Buffer | Record<string, string | Buffer>; reason: string }> = [
    { value: { payload: good[0]!.json, other: 'x' }, reason: 'missing_field' },
    { value: '', reason: 'empty_message' },
    { value: '{"verb": ', reason: 'malformed_json' },
    { value: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), reason: 'invalid_utf8' },
    { value: JSON.stringify({ ...template, verb: { id: 'http://x/verbs/a\u0000b' }, timestamp: new Date(good[10]!.tsMs).toISOString(), result: { score: { scaled: 1 } } }), reason: 'invalid_text' },
    { value: JSON.stringify({ ...template, verb: { id: 'http://x/verbs/\ud800' }, timestamp: new Date(good[10]!.tsMs).toISOString(), result: { score: { scaled: 1 } } }), reason: 'invalid_text' },
    { value: `{"pad":"${'x'.repeat(3 * 1024 * 1024)}"}`, reason: 'too_large' },
  ];
  const values: Array<string | Buffer | Record<string, string | Buffer>> = [];
  let h = 0;
  for (let i = 0; i < good.length; i++) {
    values.push(good[i]!.json);
    if (i % 400 === 200 && h < hostile.length) values.push(hostile[h++]!.value);
  }
  while (h < hostile.length) values.push(hostile[h++]!.value);
  await xadd(redis, stream, values);
  const e = startRedisEngine(t, { REDIS_STREAMS: stream, REDIS_GROUP_ID: group, REDIS_CONSUMER: 'h', MAX_MESSAGE_BYTES: String(1024 * 1024), BATCH_SIZE: '250' });
  await waitFor([e], () => e.metric('streamstats_records_total', { result: 'ok' }) >= good.length && e.metric('streamstats_open_series') === 0 && e.sum('streamstats_consumer_lag_messages') === 0, 'all applied');
  await waitFor([e], () => e.deadLetters().length >= hostile.length, 'dead letters written', 10_000).catch(() => {});
  const dl = e.deadLetters();
  t.same(dl.map((d) => d.reason).sort(), hostile.map((x) => x.reason).sort(), 'one dead letter per hostile entry, with its reason');
  const missing = dl.find((d) => d.reason === 'missing_field');
  t.match(missing?.detail ?? '', /has no field "data" \(REDIS_FIELD\); its fields: "payload", "other"/, 'missing_field says which field and what the entry had');
  t.ok(dl.every((d) => d.topic === stream && typeof d.key === 'string'), 'dead letters carry the stream and the entry id (key)');
  const big = dl.find((d) => d.reason === 'too_large');
  t.ok(big?.value_truncated === true && (big.value_bytes ?? 0) > 3 * 1024 * 1024, 'the megabyte value is cut, and its size kept');
  const rows = e.rows();
  const exp = expectedRows(good);
  t.equal(rows.length, exp.size, 'every window of the good statements emitted once');
  const bad = rows.filter((r) => {
    const x = exp.get(rowKey(r));
    return !(x !== undefined && r.count === x.count && close(r.sum, x.sum) && r.min === x.min && r.max === x.max);
  });
  t.equal(bad.length, 0, 'the good statements give the reference statistics');
  await waitFor([e], () => e.metric('streamstats_redis_pending_entries', { stream }) === 0, 'everything acknowledged', 20_000);
  t.equal(Number(((await redis.sendCommand(['XPENDING', stream, group])) as unknown[])[0]), 0, 'no entry left pending, hostile ones included');
});
