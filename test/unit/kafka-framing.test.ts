// Kafka responses read into buffers of their own (src/kafka/framing.ts, socket.ts): the framer cuts
// any byte stream of length-prefixed frames into the same frames, whatever the reads' sizes; an
// oversized or negative length is passed on as it arrives; through a real TCP socket kafkajs's
// Connection gets every response whole, and decodes it where it was read (no copy).
import { createRequire } from 'node:module';
import net from 'node:net';
import t from 'tap';
import { framingCounts, OWN_BUFFER_MAX_BYTES, ResponseFramer, SCRATCH_BYTES } from '../../src/kafka/framing.js';
import { holdFrame } from '../../src/kafka/frame-pool.js';
import { framedSocketFactory, patchWholeResponses } from '../../src/kafka/socket.js';
import { Rng } from '../fixtures/gen.js';

const require = createRequire(import.meta.url);

function frame(rng: Rng, length: number): Buffer {
  const b = Buffer.allocUnsafe(4 + length);
  b.writeInt32BE(length, 0);
  for (let i = 4; i < b.length; i++) b[i] = rng.below(256);
  return b;
}

interface FeedOptions {
  /** The framer's own-buffer bound (ResponseFramer's maxOwnBytes). */
  readonly maxOwnBytes?: number;
  /** Called after each read with the framer, to look at where the next read goes. */
  readonly afterRead?: (f: ResponseFramer) => void;
}

/** Feeds `stream` through a framer in reads of 1..`maxRead` bytes (each also bounded by target()). */
function feed(stream: Buffer, rng: Rng, maxRead: number, o: FeedOptions = {}): Buffer[] {
  const out: Buffer[] = [];
  const f = new ResponseFramer((b) => out.push(b), o.maxOwnBytes);
  for (let at = 0; at < stream.length; ) {
    const target = f.target();
    if (target.length === 0) throw new Error('a read without room');
    const n = Math.min(target.length, stream.length - at, 1 + rng.below(maxRead));
    stream.copy(target, 0, at, at + n);
    at += n;
    f.read(n);
    o.afterRead?.(f);
  }
  return out;
}

t.test('any stream of frames, in reads of any size, comes out as the same frames', async (t) => {
  const rng = new Rng(7);
  for (let round = 0; round < 200; round++) {
    const lengths: number[] = [];
    const n = 1 + rng.below(12);
    for (let i = 0; i < n; i++) {
      const kind = rng.below(4);
      lengths.push(kind === 0 ? 0 : kind === 1 ? rng.below(64) : kind === 2 ? rng.below(SCRATCH_BYTES) : SCRATCH_BYTES + rng.below(3 * SCRATCH_BYTES));
    }
    const frames = lengths.map((l) => frame(rng, l));
    const stream = Buffer.concat(frames);
    const maxRead = [1, 3, 17, 4096, SCRATCH_BYTES, 4 * SCRATCH_BYTES][round % 6]!;
    const out = feed(stream, rng, maxRead);
    if (out.length !== frames.length || out.some((o, i) => !o.equals(frames[i]!))) {
      t.fail(`round ${round}: ${out.length} frames out of ${frames.length} (reads up to ${maxRead} bytes, lengths ${lengths.join(',')})`);
      return;
    }
  }
  t.pass('200 streams, every frame equal and in order');
});

t.test('a frame handed over is never written again', async (t) => {
  const rng = new Rng(11);
  const frames = Array.from({ length: 50 }, () => frame(rng, rng.below(3000)));
  const copies = frames.map((f) => Buffer.from(f));
  const out = feed(Buffer.concat(frames), rng, 9000);
  t.same(out.map((o) => o.toString('hex')), copies.map((c) => c.toString('hex')), 'each frame as it was when handed over, after all the reads that followed');
});

t.test('a long frame is read into a buffer of its own: one copy of its first read, the rest in place', async (t) => {
  const rng = new Rng(3);
  const big = frame(rng, 1_000_000);
  const before = framingCounts.ownBuffers;
  const targets: Buffer[] = [];
  const out = feed(big, rng, 65_536, { afterRead: (f) => targets.push(f.target()) });
  t.equal(framingCounts.ownBuffers - before, 1, 'one buffer of its own');
  t.equal(out.length, 1);
  t.ok(out[0]!.equals(big), 'the frame, whole');
  const inPlace = targets.filter((x) => x.buffer === out[0]!.buffer).length;
  t.ok(inPlace >= targets.length - 3, `the reads after its length was in went into the frame handed over (${inPlace} of ${targets.length})`);
});

t.test('a length over the own-buffer bound is passed on as it arrives, and the framing goes on after it', async (t) => {
  const rng = new Rng(5);
  // A peer that says 2^31-1 bytes and sends a few: nothing of that size is allocated.
  const huge = Buffer.alloc(4);
  huge.writeInt32BE(2 ** 31 - 1, 0);
  t.ok(2 ** 31 - 1 > OWN_BUFFER_MAX_BYTES);
  const body = Buffer.alloc(100_000, 7);
  const out = feed(Buffer.concat([huge, body]), rng, 5000);
  t.ok(Buffer.concat(out).equals(Buffer.concat([huge, body])), 'every byte passed on, in order');
  t.ok(out.every((o) => o.length <= SCRATCH_BYTES), 'in pieces no longer than a read');
  // Bounded at 1,000 bytes: a 5,000-byte frame is passed on in pieces, the frames around it whole.
  const before = frame(rng, 300);
  const over = frame(rng, 5000);
  const after = frame(rng, 500);
  const got = feed(Buffer.concat([before, over, after]), rng, 700, { maxOwnBytes: 1000 });
  t.ok(got[0]!.equals(before), 'the frame before it, whole');
  t.ok(got[got.length - 1]!.equals(after), 'the frame after it, whole');
  const middle = got.slice(1, -1);
  t.ok(middle.length > 1 && Buffer.concat(middle).equals(over), `the oversized one in ${middle.length} pieces, every byte`);
});

t.test('a negative length leaves the stream unframed: every byte after it passed on as it comes', async (t) => {
  const rng = new Rng(9);
  const bad = Buffer.alloc(4);
  bad.writeInt32BE(-5, 0);
  const rest = Buffer.concat([frame(rng, 10), frame(rng, 20)]);
  const out = feed(Buffer.concat([bad, rest]), rng, 8);
  t.ok(Buffer.concat(out).equals(Buffer.concat([bad, rest])), 'the bytes, in order, as they came');
});

t.test('through a TCP socket: one data event a frame, whatever the writes', async (t) => {
  const rng = new Rng(13);
  const frames = Array.from({ length: 40 }, (_, i) => frame(rng, i % 5 === 0 ? 200_000 + rng.below(300_000) : rng.below(2000)));
  const stream = Buffer.concat(frames);
  const server = net.createServer(async (s) => {
    // Written in pieces that cut across frames, with pauses so that the reads see them apart.
    for (let at = 0; at < stream.length; ) {
      const n = 1 + rng.below(150_000);
      s.write(stream.subarray(at, at + n));
      at += n;
      if (rng.below(3) === 0) await new Promise((r) => setTimeout(r, 2));
    }
    s.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const port = (server.address() as net.AddressInfo).port;
  const got: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    const socket = framedSocketFactory({ host: '127.0.0.1', port, ssl: null as never, onConnect: () => {} });
    socket.on('data', (b: Buffer) => got.push(b));
    socket.on('end', () => resolve());
    socket.on('error', reject);
  });
  t.equal(got.length, frames.length, `${got.length} data events for ${frames.length} frames`);
  t.ok(got.every((g, i) => g.equals(frames[i]!)), 'each one frame, whole and in order');
  // What the Kafka source cuts into views: a long response is read into shared memory of the frame pool.
  const long = got.filter((g) => g.length > SCRATCH_BYTES);
  t.ok(long.length >= 8 && long.every((g) => g.buffer instanceof SharedArrayBuffer && holdFrame(g) !== null), `the ${long.length} long frames are in the frame pool`);
});

t.test("kafkajs's Connection decodes a whole response where it was read", async (t) => {
  t.equal(patchWholeResponses(), true, 'installed on kafkajs 2.2.4');
  t.equal(patchWholeResponses(), true, 'a second call finds it installed');
  const Connection = require('kafkajs/src/network/connection.js') as { prototype: object };
  const fulfilled: Array<{ correlationId: number; payload: Buffer }> = [];
  const c = Object.assign(Object.create(Connection.prototype) as { processData(b: Buffer): void }, {
    authHandlers: null,
    chunks: [] as Buffer[],
    bytesBuffered: 0,
    bytesNeeded: 4,
    requestQueue: { fulfillRequest: (r: { correlationId: number; payload: Buffer }) => fulfilled.push(r) },
  });
  const response = (id: number, body: number): Buffer => {
    const b = Buffer.alloc(4 + 4 + body, id);
    b.writeInt32BE(4 + body, 0);
    b.writeInt32BE(id, 4);
    return b;
  };
  const first = response(1, 1000);
  const second = response(2, 300_000);
  c.processData(first);
  c.processData(second);
  t.same(fulfilled.map((f) => [f.correlationId, f.payload.length]), [[1, 1000], [2, 300_000]], 'both responses, their payloads');
  t.equal(fulfilled[1]!.payload.buffer, second.buffer, 'the second (after an empty remainder) decoded in place: no copy');
  // Still kafkajs's joining for a response in pieces.
  const third = response(3, 5000);
  c.processData(third.subarray(0, 100));
  c.processData(third.subarray(100));
  t.same(fulfilled[2] && [fulfilled[2].correlationId, fulfilled[2].payload.length], [3, 5000], 'a response in two chunks, joined');
});
