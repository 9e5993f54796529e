// Dead letters as the engine builds them: what each entry carries, in which field order, and the cuts.
import t from 'tap';
import { Decoder } from '../../src/core/decode.js';
import { DeadLetterBuilder, MAX_ROW_DEAD_LETTER_BYTES, messageRanges, type BatchOrigin } from '../../src/engine/dead-letters.js';
import { CELL } from '../../src/core/messages.js';
import type { StatsRow } from '../../src/windows/row.js';
import { pack, settings } from '../fixtures/gen.js';

const MAX = 16;
const builder = new DeadLetterBuilder({ sourceName: 'kafka:in', decoder: new Decoder(settings({ maxMessageBytes: MAX })), windowMs: 60_000, allowedLatenessSeconds: 5, maxSeries: 10 });

function origin(messages: string[], replayed: ReadonlySet<number> = new Set(), withIdentity = true): BatchOrigin {
  const { buffer, offsets } = pack(messages);
  return {
    batch: { lane: 7, seq: 3, data: Buffer.from(buffer), offsets, positions: messages.map((_, i) => String(100 + i)), keys: messages.map((_, i) => (i === 0 ? Buffer.from('k') : null)) },
    ...(withIdentity ? { identity: { topic: 'in', partition: 2 } } : { identity: undefined }),
    replay: (m) => replayed.has(m),
  };
}

t.test('a message dead letter: where it came from, its bytes, fields in the output order', async (t) => {
  const e = builder.message(origin(['{"bad"', 'x']), 0, -1, 'malformed_json', 'JSON: unexpected end');
  t.same(Object.keys(e), ['time', 'reason', 'detail', 'source', 'partition', 'batch_seq', 'message_index', 'element', 'value', 'value_encoding', 'offset', 'key', 'topic', 'kafka_partition']);
  t.match(e, { reason: 'malformed_json', source: 'kafka:in', partition: 7, batch_seq: 3, message_index: 0, element: -1, value: '{"bad"', value_encoding: 'utf8', offset: '100', key: Buffer.from('k').toString('base64'), topic: 'in', kafka_partition: 2 });
  const bin = builder.message(origin(['a', '\xff']), 1, -1, 'invalid_utf8', 'bad bytes');
  t.equal(bin.value_encoding, 'base64');
  t.equal(Buffer.from(bin.value, 'base64').toString('latin1'), Buffer.from('\xff').toString('latin1'));
  t.notOk('key' in bin, 'a null key is left out');
  const plain = builder.message(origin(['a'], new Set(), false), 0, -1, 'empty_message', 'd');
  t.notOk('topic' in plain || 'kafka_partition' in plain, 'no identity for an unpartitioned input');
});

t.test('too_large keeps MAX_MESSAGE_BYTES and says how big the original was', async (t) => {
  const big = 'y'.repeat(40);
  const e = builder.message(origin([big]), 0, -1, 'too_large', 'too big');
  t.equal(e.value, big.slice(0, MAX));
  t.equal(e.value_truncated, true);
  t.equal(e.value_bytes, 40);
  const o = origin([big.slice(0, MAX + 1)]);
  const cut = { ...o, batch: { ...o.batch, oversized: new Map([[0, { bytes: 5000 }]]) } };
  const counted: string[] = [];
  const [fromSource] = builder.rejects(cut, [{ msg: 0, elem: -1, reason: 'too_large', detail: 'ignored' }], (r, n) => counted.push(`${r}:${n}`));
  t.equal(fromSource?.value_bytes, 5000, 'the size the source saw, not what the batch holds');
  t.match(fromSource?.detail, /5000 bytes, more than MAX_MESSAGE_BYTES=16/);
  t.same(counted, ['too_large:1']);
});

t.test('rejects skip replays; counts per reason', async (t) => {
  const counted: string[] = [];
  const entries = builder.rejects(origin(['a', 'b', 'c'], new Set([0])), [
    { msg: 0, elem: -1, reason: 'malformed_json', detail: 'x' },
    { msg: 1, elem: 2, reason: 'wrong_type', detail: 'y', raw: '{"v":1}' },
    { msg: 2, elem: -1, reason: 'wrong_type', detail: 'z', counts: { wrong_type: 2, missing_field: 1 } },
  ], (r, n) => counted.push(`${r}:${n}`));
  t.same(entries.map((e) => [e.message_index, e.element, e.value]), [[1, 2, '{"v":1}'], [2, -1, 'c']], 'the replayed message 0 is skipped');
  t.same(counted, ['wrong_type:1', 'wrong_type:2', 'missing_field:1']);
  t.same(builder.poisoned(origin(['a', 'b']), 'worker crashed').map((e) => [e.reason, e.message_index, e.detail]), [['poisoned_batch', 0, 'worker crashed'], ['poisoned_batch', 1, 'worker crashed']]);
});

t.test('refused rows: the row JSON, cut at MAX_ROW_DEAD_LETTER_BYTES, and the records they held', async (t) => {
  const row = (name: string, count: number) => ({ name, count }) as unknown as StatsRow;
  const long = row('z'.repeat(MAX_ROW_DEAD_LETTER_BYTES + 10), 5);
  const { entries, records } = builder.rows(4, { topic: 'in', partition: 1 }, [row('a', 2), long, row('c', 3)], [{ index: 1, detail: 'too big' }, { index: 2, detail: 'bad' }, { index: 9, detail: 'gone' }], 'postgres');
  t.equal(records, 8, 'records of the rows refused (an index out of range is ignored)');
  t.same(entries.map((e) => [e.reason, e.detail, e.partition, e.topic, e.kafka_partition]), [['sink_rejected', 'postgres: too big', 4, 'in', 1], ['sink_rejected', 'postgres: bad', 4, 'in', 1]]);
  t.equal(Buffer.byteLength(entries[0]!.value), MAX_ROW_DEAD_LETTER_BYTES);
  t.equal(entries[0]!.value_bytes, Buffer.byteLength(JSON.stringify(long)));
  t.same(JSON.parse(entries[1]!.value), { name: 'c', count: 3 });
});

t.test('late and over-limit records are found again in their cells\' messages alone, as a whole-batch re-read finds them', async (t) => {
  const { Rng, monascaRecord: rec } = await import('../fixtures/gen.js');
  const decoder = new Decoder(settings());
  const late = new DeadLetterBuilder({ sourceName: 'file:x', decoder, windowMs: 60_000, allowedLatenessSeconds: 5, maxSeries: 10 });
  const rng = new Rng(31);
  let cases = 0;
  let narrowed = 0;
  for (let round = 0; round < 200; round++) {
    // Messages of a few series over a few windows, some of them JSON arrays of records.
    const messages: string[] = [];
    const n = rng.int(1, 60);
    for (let i = 0; i < n; i++) {
      const one = () => rec({ name: `m${rng.int(0, 3)}`, value: rng.int(0, 100), timestamp: 1_700_000_000_000 + rng.int(0, 4) * 60_000 + rng.int(0, 59_999), dimensions: { h: `h${rng.int(0, 2)}` } });
      messages.push(JSON.stringify(rng.bool(0.2) ? [one(), one(), one()] : one()));
    }
    const o = origin(messages);
    const decoded = decoder.decodeBytes(o.batch.data, o.batch.offsets, Date.now());
    // Refuse a random handful of the batch's cells, as the store would (some late, some over the limit).
    const cells: Array<{ key: string; windowStart: number; count: number }> = [];
    for (let c = 0; c * CELL.STRIDE < decoded.cells.length; c++) {
      if (rng.bool(0.25)) cells.push({ key: decoded.series[decoded.cells[c * CELL.STRIDE]!]!, windowStart: decoded.cells[c * CELL.STRIDE + CELL.WINDOW_START]!, count: decoded.cells[c * CELL.STRIDE + CELL.COUNT]! });
    }
    const refusedLate = cells.filter((_, i) => i % 2 === 0);
    const refusedOver = cells.filter((_, i) => i % 2 === 1);
    const narrow = late.refusedRecords(o, decoded, refusedLate, refusedOver, 1_700_000_000_000, 0);
    const { messageCells: _drop, ...withoutRanges } = decoded;
    const whole = late.refusedRecords(o, withoutRanges, refusedLate, refusedOver, 1_700_000_000_000, 0);
    const strip = (es: typeof narrow.entries) => es.map(({ time: _t, ...e }) => e);
    t.same(strip(narrow.entries), strip(whole.entries), `round ${round}: the same dead letters, in the same order`);
    t.equal(narrow.found, cells.reduce((a, c) => a + c.count, 0), `round ${round}: every refused record found`);
    cases++;
    const read = messageRanges(decoded, cells, messages.length).reduce((a, [f, l]) => a + l - f + 1, 0);
    if (read < messages.length) narrowed++;
  }
  t.equal(cases, 200);
  t.ok(narrowed > 100, `most rounds re-read fewer messages than the batch (${narrowed} of ${cases})`);
  // One late record in the middle of a thousand messages: only its message is read again.
  const many = Array.from({ length: 1000 }, (_, i) => JSON.stringify(rec({ name: 'cpu', value: i, timestamp: i === 500 ? 1_699_999_000_000 : 1_700_000_000_000 + i, dimensions: { h: 'a' } })));
  const d = decoder.decodeBytes(origin(many).batch.data, origin(many).batch.offsets, Date.now());
  const lateCell = [...Array(d.cells.length / CELL.STRIDE).keys()].find((c) => d.cells[c * CELL.STRIDE + CELL.WINDOW_START] === 1_699_998_960_000)!;
  t.same(messageRanges(d, [{ key: d.series[d.cells[lateCell * CELL.STRIDE]!]!, windowStart: d.cells[lateCell * CELL.STRIDE + CELL.WINDOW_START]! }], 1000), [[500, 500]], 'the late record\'s message alone');
});
