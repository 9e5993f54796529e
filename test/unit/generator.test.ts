// The generator's workload split into lanes (LANE_STATE=worker: each owner generates its lane's
// share): every point lands in exactly one lane, each series' points in one lane in their order, and
// the bytes are those of the one sequential stream (whose digest is pinned: seeds keep their workload).
import { createHash } from 'node:crypto';
import t from 'tap';
import { BatchBuilder } from '../../src/core/batch.js';
import { LanePoints, Workload, generatePoints, laneCount, prng, prngAt, type GeneratorShape } from '../../src/core/generator.js';

const CFG: GeneratorShape = { count: 30_000, metrics: 700, hosts: 3, intervalMs: 10_000, startMs: 1_581_424_933_000, seed: 3 };

function messages(points: LanePoints, from: number, n: number, maxBytes = Infinity): string[] {
  const b = new BatchBuilder(1024);
  points.write(b, from, n, maxBytes);
  const { data, offsets } = b.take();
  const out: string[] = [];
  for (let i = 0; i + 1 < offsets.length; i++) out.push(data.toString('latin1', offsets[i], offsets[i + 1]));
  return out;
}

t.test('generatePoints is the workload it was: digests of two seeds pinned', async (t) => {
  const digest = (cfg: GeneratorShape): string => {
    const h = createHash('sha256');
    for (const p of generatePoints(cfg)) h.update(`${p.json}\n`);
    return h.digest('hex');
  };
  t.equal(digest(CFG), '22c555ec643933ebbfa923f265627fde18c57123d5338386a151818da9e6433d');
  t.equal(digest({ count: 5000, metrics: 1, hosts: 1, intervalMs: 500, startMs: 1_581_424_933_000, seed: 2 ** 32 - 1 }), '65ad3f614437505b4400038d4ffd12573ae8c5b579a045494e201d31e971ab28');
});

t.test('prngAt(seed, k) is draw k of prng(seed), also past 2^32 draws', async (t) => {
  for (const seed of [0, 1, 3, 0x7fffffff, 2 ** 32 - 1]) {
    const rand = prng(seed);
    const ok = Array.from({ length: 2000 }, (_, k) => rand() === prngAt(seed, k)).every(Boolean);
    t.ok(ok, `seed ${seed}: the first 2000 draws`);
    // The state is a counter modulo 2^32: draw k and draw k + 2^32 are the same.
    t.equal(prngAt(seed, 2 ** 32 + 17), prngAt(seed, 17), `seed ${seed}: draw 2^32 + 17`);
  }
});

t.test('one lane is the whole stream, byte for byte', async (t) => {
  const want = [...generatePoints(CFG)].map((p) => p.json);
  const one = new LanePoints(CFG, { lanes: 1, index: 0 });
  t.equal(one.count, CFG.count);
  t.same(messages(one, 0, CFG.count), want);
  t.same(messages(one, 12_345, 7), want.slice(12_345, 12_352), 'any range, reached directly');
});

t.test('lanes split the stream by series index: each point once, each series in one lane, in order', async (t) => {
  const all = [...generatePoints(CFG)].map((p) => p.json);
  const perRound = CFG.metrics * CFG.hosts;
  for (const lanes of [2, 3, 7]) {
    const seen = new Array<number>(all.length).fill(0);
    let total = 0;
    for (let index = 0; index < lanes; index++) {
      const share = new LanePoints(CFG, { lanes, index });
      total += share.count;
      const got = messages(share, 0, share.count);
      const indexes = Array.from({ length: share.count }, (_, j) => share.pointIndex(j));
      t.ok(indexes.every((i, j) => j === 0 || i > indexes[j - 1]!), `${lanes} lanes, lane ${index}: points in stream order`);
      t.ok(indexes.every((i) => (i % perRound) % lanes === index), `${lanes} lanes, lane ${index}: only its series`);
      t.ok(got.every((m, j) => m === all[indexes[j]!]), `${lanes} lanes, lane ${index}: the stream's bytes`);
      for (const i of indexes) seen[i]!++;
    }
    t.equal(total, CFG.count, `${lanes} lanes: the counts add up to GEN_COUNT`);
    t.ok(seen.every((n) => n === 1), `${lanes} lanes: every point in exactly one lane`);
  }
});

t.test('lane counts for counts that end inside a round, and fewer series than owners', async (t) => {
  for (const count of [0, 1, 2099, 2100, 2101, 4567]) {
    const cfg = { ...CFG, count };
    const counts = [0, 1, 2, 3].map((index) => new LanePoints(cfg, { lanes: 4, index }).count);
    t.equal(counts.reduce((a, b) => a + b, 0), count, `GEN_COUNT=${count}: ${counts.join(' + ')}`);
  }
  t.equal(laneCount({ metrics: 1, hosts: 2 }, 8), 2, 'no lane without a series');
  t.equal(laneCount({ metrics: 1000, hosts: 4 }, 3), 3);
  t.equal(laneCount({ metrics: 1000, hosts: 4 }, 0), 1);
  t.throws(() => new LanePoints(CFG, { lanes: 2, index: 2 }), /index must be an integer in \[0, lanes\)/);
});

t.test('write stops at the point that reaches maxBytes; maxPointBytes bounds every point', async (t) => {
  const w = new Workload({ ...CFG, hosts: 1234 });
  const bound = w.maxPointBytes();
  const longest = Math.max(...[...generatePoints({ ...CFG, hosts: 1234, count: 20_000 })].map((p) => Buffer.byteLength(p.json)));
  t.ok(longest <= bound, `longest point ${longest} bytes <= bound ${bound}`);
  const share = new LanePoints(CFG, { lanes: 1, index: 0 });
  const got = messages(share, 0, 100, 3000);
  const bytes = got.reduce((a, m) => a + m.length, 0);
  t.ok(bytes >= 3000 && bytes - got.at(-1)!.length < 3000, `${got.length} points, ${bytes} bytes: the last one crossed 3000`);
});
