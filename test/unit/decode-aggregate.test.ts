import t from 'tap';
import { Decoder } from '../../src/core/decode.js';
import { CELL, type DecodeResult } from '../../src/core/messages.js';
import { parseSeriesKey } from '../../src/core/series.js';
import { emptyMoments, mergeMoments, type Moments } from '../../src/core/stats.js';
import { Rng, monascaRecord, pack, relDiff, settings } from '../fixtures/gen.js';

/** The subtest type (the last overload of t.test takes just the callback). */
type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

const BASE = Date.UTC(2020, 1, 11, 12, 0, 0);
const NAMES = ['cpu.idle_perc', 'mem.free_mb', 'disk.used_bytes', 'net.in_bytes_sec', 'load.avg_1_min'];
/** Value offsets per name: some large, to exercise the numerics. */
const OFFSETS = [50, 4096, 1e9, 0, -20];
const HOSTS = ['h0', 'h1', 'h2', 'h3', 'h4', 'h5'];
const SERVICES = ['svc-a', 'svc-b'];
const ZONES = ['z1', 'z2', 'z3'];
const TENANTS = ['t-0', 't-1'];

interface GenRecord {
  name: string;
  value: number;
  tsMs: number;
  /** All dimensions the decoder should see, incl. _tenant_id/_region from meta. */
  dims: Record<string, string>;
}

interface Workload {
  messages: string[];
  valid: GenRecord[];
  /** Records (array elements count one each), valid or not. */
  total: number;
  invalid: number;
}

/** ~5000 monasca records over several windows, out of order, as single and array messages, with a few bad ones. */
function workload(seed: number, n: number, spanMs: number): Workload {
  const rng = new Rng(seed);
  const messages: string[] = [];
  const valid: GenRecord[] = [];
  let total = 0;
  let invalid = 0;
  const makeOne = (): { obj: unknown; rec: GenRecord | null } => {
    total++;
    if (rng.bool(0.03)) {
      invalid++;
      const kind = rng.int(0, 3);
      const ts = BASE + rng.int(0, spanMs);
      if (kind === 0) return { obj: monascaRecord({ name: 'x', value: 'NaN', timestamp: ts }), rec: null };
      if (kind === 1) return { obj: monascaRecord({ name: '', value: 1, timestamp: ts }), rec: null };
      if (kind === 2) return { obj: monascaRecord({ name: 'x', value: 1, timestamp: -5 }), rec: null };
      return { obj: 'not an object', rec: null };
    }
    const i = rng.int(0, NAMES.length - 1);
    const name = NAMES[i]!;
    // Out of order: uniform over the whole span (several windows), with fractional milliseconds sometimes.
    const tsMs = BASE + rng.int(0, spanMs) + (rng.bool(0.1) ? 0.25 : 0);
    const value = OFFSETS[i]! + (rng.bool(0.02) ? rng.range(-1e4, 1e4) : rng.range(-50, 50));
    const dimensions: Record<string, string> = { hostname: rng.pick(HOSTS), service: rng.pick(SERVICES) };
    if (rng.bool(0.6)) dimensions['zone'] = rng.pick(ZONES);
    const tenantId = rng.pick(TENANTS);
    const region = rng.bool(0.8) ? 'RegionOne' : null;
    const dims = { ...dimensions, _tenant_id: tenantId };
    if (region !== null) (dims as Record<string, string>)['_region'] = region;
    return { obj: monascaRecord({ name, value, timestamp: tsMs, dimensions, tenantId, region }), rec: { name, value, tsMs, dims } };
  };
  while (total < n) {
    if (rng.bool(0.5)) {
      const { obj, rec } = makeOne();
      messages.push(JSON.stringify(obj));
      if (rec !== null) valid.push(rec);
    } else {
      const k = rng.int(1, 8);
      const arr: unknown[] = [];
      for (let j = 0; j < k; j++) {
        const { obj, rec } = makeOne();
        arr.push(obj);
        if (rec !== null) valid.push(rec);
      }
      messages.push(JSON.stringify(arr));
    }
  }
  return { messages, valid, total, invalid };
}

/** Identity used to compare the decoder's series with the reference, independent of the key encoding. */
function canon(name: string, unit: string | null, pairs: ReadonlyArray<readonly [string, string | null]>): string {
  return JSON.stringify([name, unit, pairs]);
}

function refIdentity(r: GenRecord, groupBy: readonly string[] | null): string {
  if (groupBy === null) {
    const keys = Object.keys(r.dims).sort();
    return canon(r.name, null, keys.map((k) => [k, r.dims[k]!] as const));
  }
  return canon(r.name, null, groupBy.map((g) => [g, Object.prototype.hasOwnProperty.call(r.dims, g) ? r.dims[g]! : null] as const));
}

interface RefCell {
  xs: number[];
  ts: number[];
}

/** Straightforward reference: bucket by (identity, window) and keep every value. */
function reference(valid: readonly GenRecord[], groupBy: readonly string[] | null, windowMs: number): Map<string, RefCell> {
  const m = new Map<string, RefCell>();
  for (const r of valid) {
    const ws = r.tsMs - (((r.tsMs % windowMs) + windowMs) % windowMs);
    const k = `${refIdentity(r, groupBy)}@${ws}`;
    let c = m.get(k);
    if (c === undefined) {
      c = { xs: [], ts: [] };
      m.set(k, c);
    }
    c.xs.push(r.value);
    c.ts.push(r.tsMs);
  }
  return m;
}

function cellMoments(r: DecodeResult): Map<string, Moments> {
  const out = new Map<string, Moments>();
  for (let o = 0; o < r.cells.length; o += CELL.STRIDE) {
    const c = r.cells;
    const id = parseSeriesKey(r.series[c[o + CELL.SERIES]!]!);
    const k = `${canon(id.name, id.unit, id.groupby)}@${c[o + CELL.WINDOW_START]!}`;
    if (out.has(k)) throw new Error(`duplicate cell ${k}`);
    out.set(k, {
      count: c[o + CELL.COUNT]!,
      mean: c[o + CELL.MEAN]!,
      m2: c[o + CELL.M2]!,
      min: c[o + CELL.MIN]!,
      max: c[o + CELL.MAX]!,
      sum: c[o + CELL.SUM]!,
      tsMin: c[o + CELL.TS_MIN]!,
      tsMax: c[o + CELL.TS_MAX]!,
    });
  }
  return out;
}

function ulp(x: number): number {
  return x === 0 ? Number.MIN_VALUE : 2 ** (Math.floor(Math.log2(x)) - 52);
}

function compare(t: TapTest, got: Map<string, Moments>, ref: Map<string, RefCell>, label: string): void {
  t.equal(got.size, ref.size, `${label}: one cell per (series, window)`);
  t.same([...got.keys()].sort(), [...ref.keys()].sort(), `${label}: the same (series, window) set`);
  let bad = 0;
  const problems: string[] = [];
  for (const [k, rc] of ref) {
    const m = got.get(k);
    if (m === undefined) continue;
    const n = rc.xs.length;
    let sum = 0;
    for (const x of rc.xs) sum += x;
    const mean = sum / n;
    let ss = 0;
    for (const x of rc.xs) ss += (x - mean) * (x - mean);
    const scale = Math.max(...rc.xs.map(Math.abs));
    const checks: Array<[string, boolean]> = [
      ['count', m.count === n],
      ['min', m.min === Math.min(...rc.xs)],
      ['max', m.max === Math.max(...rc.xs)],
      ['tsMin', m.tsMin === Math.min(...rc.ts)],
      ['tsMax', m.tsMax === Math.max(...rc.ts)],
      ['sum', Math.abs(m.sum - sum) <= 1e-12 * scale * n],
      ['mean', Math.abs(m.mean - mean) <= 1e-12 * scale],
      // Each deviation x - mean carries a rounding error of about ulp(|x|), so m2 (and the reference) can
      // be off by about 2 * n * stddev * ulp; for values near 1e9 that exceeds 1e-9 relative.
      ['m2', Math.abs(m.m2 - ss) <= 1e-9 * ss + 4 * n * Math.sqrt(ss / n) * ulp(scale)],
    ];
    for (const [what, ok] of checks) {
      if (!ok) {
        bad++;
        if (problems.length < 5) problems.push(`${k} ${what}: got ${JSON.stringify(m)}, n=${n} sum=${sum} mean=${mean} m2=${ss}`);
      }
    }
  }
  t.equal(bad, 0, `${label}: every cell matches the reference`, { problems });
}

function decode(groupBy: readonly string[] | null, windowMs: number, messages: readonly string[]): DecodeResult {
  const { buffer, offsets } = pack(messages);
  return new Decoder(settings({ groupBy, windowMs })).decodeBatch(buffer, offsets, BASE);
}

const W = workload(2020, 5000, 6 * 60_000 + 59_999);

t.test('workload sanity', async (t) => {
  t.ok(W.total >= 5000, `${W.total} records`);
  t.ok(W.invalid > 50, `${W.invalid} invalid records`);
  const windows = new Set(W.valid.map((r) => Math.floor(r.tsMs / 60_000)));
  t.ok(windows.size >= 7, `${windows.size} windows`);
  let inversions = 0;
  for (let i = 1; i < W.valid.length; i++) if (W.valid[i]!.tsMs < W.valid[i - 1]!.tsMs) inversions++;
  t.ok(inversions > W.valid.length / 3, 'timestamps are out of order');
  t.ok(W.valid.some((r) => r.dims['zone'] === undefined) && W.valid.some((r) => r.dims['zone'] !== undefined), 'zone sometimes missing');
});

for (const [label, groupBy] of [
  ['all dimensions', null],
  ['GROUP_BY=hostname', ['hostname']],
  ['GROUP_BY=zone,hostname (zone sometimes missing)', ['zone', 'hostname']],
  ['GROUP_BY=_tenant_id', ['_tenant_id']],
  ['GROUP_BY=nosuchdim', ['nosuchdim']],
] as const) {
  for (const windowMs of [60_000, 10_000, 3_600_000]) {
    t.test(`${label}, window ${windowMs / 1000}s`, async (t) => {
      const r = decode(groupBy, windowMs, W.messages);
      t.equal(r.kind, 'partials');
      t.equal(r.records, W.total, 'records counts every array element');
      t.equal(r.ok, W.valid.length, 'ok = valid records');
      t.equal(r.rejects.length, W.invalid, 'one reject per invalid record');
      t.equal(r.maxEventMs, Math.max(...W.valid.map((x) => x.tsMs)), 'maxEventMs');
      t.equal(r.cells.length % CELL.STRIDE, 0, 'whole cells');
      t.equal(new Set(r.series).size, r.series.length, 'series are unique');
      const used = new Set<number>();
      let aligned = true;
      for (let o = 0; o < r.cells.length; o += CELL.STRIDE) {
        used.add(r.cells[o + CELL.SERIES]!);
        const ws = r.cells[o + CELL.WINDOW_START]!;
        if (ws % windowMs !== 0 || r.cells[o + CELL.TS_MIN]! < ws || r.cells[o + CELL.TS_MAX]! >= ws + windowMs) aligned = false;
      }
      t.ok(aligned, 'windows aligned to the epoch and holding their timestamps');
      t.equal(used.size, r.series.length, 'every series has a cell');
      if (groupBy !== null) {
        const ok = r.series.every((s) => {
          const id = parseSeriesKey(s);
          return JSON.stringify(id.groupby.map(([k]) => k)) === JSON.stringify(groupBy);
        });
        t.ok(ok, 'group-by series carry exactly the GROUP_BY dimensions, in order');
      }
      let got: Map<string, Moments>;
      try {
        got = cellMoments(r);
      } catch (err) {
        t.fail(String(err));
        return;
      }
      compare(t, got, reference(W.valid, groupBy, windowMs), label);
    });
  }
}

t.test('missing group-by dimension is null, not absent', async (t) => {
  const r = decode(['zone'], 60_000, W.messages);
  const zones = new Set(r.series.map((s) => parseSeriesKey(s).groupby[0]?.[1]));
  t.same([...zones].sort(), [null, ...ZONES].sort((a, b) => String(a).localeCompare(String(b))).sort(), 'zone values incl. null');
  const nulls = r.series.filter((s) => parseSeriesKey(s).groupby[0]?.[1] === null);
  t.equal(nulls.length, NAMES.length, 'one null-zone series per name');
});

t.test('partials of split batches merge to the whole', async (t) => {
  const rng = new Rng(7);
  for (const groupBy of [null, ['hostname']] as const) {
    const merged = new Map<string, Moments>();
    let ok = 0;
    let i = 0;
    while (i < W.messages.length) {
      const k = rng.int(1, 400);
      const r = decode(groupBy, 60_000, W.messages.slice(i, i + k));
      ok += r.ok;
      for (const [key, m] of cellMoments(r)) {
        const acc = merged.get(key) ?? emptyMoments();
        mergeMoments(acc, m);
        merged.set(key, acc);
      }
      i += k;
    }
    t.equal(ok, W.valid.length, `${String(groupBy)}: all valid records accepted across batches`);
    compare(t, merged, reference(W.valid, groupBy, 60_000), `split batches, groupBy ${String(groupBy)}`);
  }
});

t.test('a series moving back and forth between windows reuses its cells', async (t) => {
  // Alternate windows for one series: the decoder caches the last window per series and must find older cells.
  const msgs: string[] = [];
  const xs: number[][] = [[], [], []];
  for (let i = 0; i < 300; i++) {
    const w = [0, 1, 2, 1, 0, 2][i % 6]!;
    const v = i * 0.5;
    xs[w]!.push(v);
    msgs.push(JSON.stringify(monascaRecord({ name: 'm', value: v, timestamp: BASE + w * 60_000 + (i % 60) * 1000, dimensions: { h: 'a' } })));
  }
  const r = decode(null, 60_000, msgs);
  t.equal(r.series.length, 1);
  t.equal(r.cells.length, 3 * CELL.STRIDE, 'three cells, one per window');
  for (let o = 0; o < r.cells.length; o += CELL.STRIDE) {
    const w = (r.cells[o + CELL.WINDOW_START]! - BASE) / 60_000;
    const vals = xs[w]!;
    t.equal(r.cells[o + CELL.COUNT], vals.length, `window ${w}: count`);
    t.equal(r.cells[o + CELL.SUM], vals.reduce((a, b) => a + b, 0), `window ${w}: sum`);
    t.ok(relDiff(r.cells[o + CELL.MEAN]!, vals.reduce((a, b) => a + b, 0) / vals.length) < 1e-12, `window ${w}: mean`);
  }
});
