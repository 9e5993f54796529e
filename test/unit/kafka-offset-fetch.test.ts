// OffsetFetch v7 (require_stable) framed by us for kafkajs: the request body and the response reader,
// checked against the bytes Kafka's message specs give (OffsetFetchRequest.json / Response.json, v7:
// flexible, compact strings and arrays, tagged fields). The broker's side: test/integration/kafka-stable-offsets.test.ts.
import t from 'tap';
import { decodeStableOffsetFetch, encodeStableOffsetFetch, isUnstableOffsets } from '../../src/kafka/offset-fetch.js';

const compact = (s: string) => Buffer.concat([Buffer.from([Buffer.byteLength(s) + 1]), Buffer.from(s)]);
const int16 = (v: number) => { const b = Buffer.alloc(2); b.writeInt16BE(v); return b; };
const int32 = (v: number) => { const b = Buffer.alloc(4); b.writeInt32BE(v); return b; };
const int64 = (v: bigint) => { const b = Buffer.alloc(8); b.writeBigInt64BE(v); return b; };
const byte = (...v: number[]) => Buffer.from(v);

t.test('the request: header tags, group, topics with their partitions, require_stable, tags', async (t) => {
  const got = encodeStableOffsetFetch('g-é', [{ topic: 'in', partitions: [{ partition: 0 }, { partition: 3 }] }, { topic: 'x', partitions: [] }]);
  const want = Buffer.concat([
    byte(0), // the v2 request header's tagged fields
    compact('g-é'),
    byte(3), // 2 topics
    compact('in'), byte(3), int32(0), int32(3), byte(0),
    compact('x'), byte(1), byte(0),
    byte(1), // require_stable
    byte(0),
  ]);
  t.same(got.toString('hex'), want.toString('hex'));
});

t.test('a group name of 200 bytes takes a two-byte length', async (t) => {
  const name = 'g'.repeat(200);
  const got = encodeStableOffsetFetch(name, []);
  t.same([...got.subarray(0, 3)], [0, 0xc9, 0x01], 'uvarint 201');
  t.equal(got.subarray(3, 203).toString(), name);
  t.same([...got.subarray(203)], [1, 1, 0], 'no topics (empty compact array), require_stable, tags');
});

function response(opts: { metadata: string | null; errorCode?: number; tags?: Buffer }): Buffer {
  return Buffer.concat([
    opts.tags ?? byte(0), // response header tags
    int32(7), // throttle
    byte(2), // 1 topic
    compact('in'),
    byte(3), // 2 partitions
    int32(0), int64(42n), int32(-1), opts.metadata === null ? byte(0) : compact(opts.metadata), int16(opts.errorCode ?? 0), byte(0),
    int32(1), int64(-1n), int32(-1), byte(0), int16(88), byte(0),
    byte(0), // topic tags
    int16(0),
    byte(0),
  ]);
}

t.test('the response: offsets as strings, metadata or null, per-partition errors, throttle as the client-side one', async (t) => {
  const got = decodeStableOffsetFetch(response({ metadata: '{"v":1}' }));
  t.same(got, {
    throttleTime: 0,
    clientSideThrottleTime: 7,
    responses: [{ topic: 'in', partitions: [
      { partition: 0, offset: '42', metadata: '{"v":1}', errorCode: 0 },
      { partition: 1, offset: '-1', metadata: null, errorCode: 88 },
    ] }],
    errorCode: 0,
  });
});

t.test('tagged fields a newer broker adds are skipped', async (t) => {
  // Two header tags: tag 0 of 3 bytes, tag 5 of 0 bytes.
  const got = decodeStableOffsetFetch(response({ metadata: null, tags: byte(2, 0, 3, 9, 9, 9, 5, 0) }));
  t.equal(got.responses[0]!.partitions[0]!.offset, '42');
  t.equal(got.responses[0]!.partitions[0]!.metadata, null);
});

t.test('a cut or lying response fails with where it broke, never reads past its bytes', async (t) => {
  const whole = response({ metadata: 'm' });
  for (const cut of [0, 3, 9, 20, whole.length - 1]) {
    t.throws(() => decodeStableOffsetFetch(whole.subarray(0, cut)), /OffsetFetch v7 response: .* at byte \d+ runs past its \d+ bytes/, `cut at ${cut}`);
  }
  // A topic count of 2^28: refused before any element is read.
  const lying = Buffer.concat([byte(0), int32(0), byte(0x81, 0x80, 0x80, 0x80, 0x01)]);
  t.throws(() => decodeStableOffsetFetch(lying), /topics at byte \d+ runs past/);
  const endless = Buffer.concat([byte(0), int32(0), byte(0xff, 0xff, 0xff, 0xff, 0xff, 0x01)]);
  t.throws(() => decodeStableOffsetFetch(endless), /varint longer than 5 bytes/);
});

t.test('UNSTABLE_OFFSET_COMMIT is recognised by type or code, nothing else is', async (t) => {
  t.ok(isUnstableOffsets({ type: 'UNSTABLE_OFFSET_COMMIT' }));
  t.ok(isUnstableOffsets({ code: 88 }));
  t.notOk(isUnstableOffsets({ type: 'CONCURRENT_TRANSACTIONS', code: 51 }));
  t.notOk(isUnstableOffsets(null));
  t.notOk(isUnstableOffsets('UNSTABLE_OFFSET_COMMIT'));
});
