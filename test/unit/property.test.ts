// Property tests (fast-check), over 100,000 generated cases in all: the decoders (a valid record of
// each format round-trips; arbitrary bytes never throw and every record is accounted ok or
// rejected), the series key encoding (round-trips, injective), the statistics merge (associative,
// commutative, equal to one pass) and the quantile sketch (merge = one sketch; quantiles within the
// stated relative accuracy of the exact ones).
import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { Decoder } from '../../src/core/decode.js';
import type { JsonMapping } from '../../src/core/formats/index.js';
import { CELL } from '../../src/core/messages.js';
import { MAX_ABS_VALUE, eventTimeLimit } from '../../src/core/record.js';
import { parseSeriesKey, seriesKey } from '../../src/core/series.js';
import { Sketch } from '../../src/core/sketch.js';
import { addSample, emptyMoments, mergeMoments, type Moments } from '../../src/core/stats.js';
import { pack, settings } from '../fixtures/gen.js';

const SEED = Number(process.env['PROPERTY_SEED'] ?? '20260101');
let total = 0;
function check<Ts extends [unknown, ...unknown[]]>(t: Test, what: string, numRuns: number, prop: fc.IProperty<Ts>): void {
  const r = fc.check(prop, { numRuns, seed: SEED });
  total += r.numRuns;
  if (r.failed) t.fail(what, { counterexample: r.counterexample, error: String(r.errorInstance), seed: r.seed, path: r.counterexamplePath });
  else t.pass(`${what} (${r.numRuns} cases)`);
}

// Any unicode text (whole code points, no lone surrogates: JSON text and UTF-8 carry those only
// lossily), including ':', '-', digits and the names Object.prototype has.
const text = fc.oneof(
  { weight: 5, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  { weight: 2, arbitrary: fc.string({ unit: fc.constantFrom(':', '-', '0', '1', '9', 'a', ' ', '"', '\\'), maxLength: 8 }) },
  { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'hasOwnProperty', 'toString', 'valueOf', '-', '0:', '1:-') },
);
// What the decoders store: text without U+0000 (invalid_text), event times whose 60 s window ends by
// 9999-12-31T23:59:59.999Z (later ones are bad_timestamp).
const storable = text.map((s) => s.replace(/\u0000/g, '\u0001'));
const LAST_EVENT_MS = eventTimeLimit(60_000) - 1;
const nonEmpty = storable.filter((s) => s.length > 0);
const finite = fc.oneof(
  fc.double({ min: -MAX_ABS_VALUE, max: MAX_ABS_VALUE, noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: -1e6, max: 1e6 }),
);
const epochMs = fc.oneof(fc.integer({ min: 0, max: LAST_EVENT_MS }), fc.double({ min: 0, max: LAST_EVENT_MS, noNaN: true }));
/** Dimension pairs with distinct names (a JSON object cannot hold two), not the envelope's meta names. */
const dims = fc.uniqueArray(fc.tuple(storable, storable), { maxLength: 10, selector: (d) => d[0] }).map((ds) => ds.filter(([k]) => k !== '_tenant_id' && k !== '_region'));

function jsonObject(pairs: ReadonlyArray<readonly [string, string]>): string {
  // Built as text: an object literal would turn "__proto__" into a prototype, not a key.
  return `{${pairs.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`;
}

function sortedDedup(ds: ReadonlyArray<readonly [string, string]>): Array<[string, string]> {
  const s = [...ds].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const out: Array<[string, string]> = [];
  for (const d of s) if (out.length === 0 || out[out.length - 1]![0] !== d[0]) out.push([d[0], d[1]]);
  return out;
}

/** Decodes one message and checks it gave exactly one accepted record with these fields. */
function roundTrips(decoder: Decoder, message: string, name: string, value: number, tsMs: number, unit: string | null, expectDims: Array<[string, string]>): boolean {
  const { buffer, offsets } = pack([message]);
  const r = decoder.decodeBatch(buffer, offsets, 0);
  if (r.records !== 1 || r.ok !== 1 || r.rejects.length !== 0 || r.series.length !== 1) return false;
  const id = parseSeriesKey(r.series[0]!);
  const c = r.cells;
  return id.name === name && id.unit === unit && JSON.stringify(id.groupby) === JSON.stringify(expectDims) &&
    c[CELL.COUNT] === 1 && c[CELL.SUM] === value && c[CELL.MIN] === value && c[CELL.MAX] === value && c[CELL.MEAN] === value &&
    c[CELL.TS_MIN] === tsMs && c[CELL.TS_MAX] === tsMs && r.maxEventMs === tsMs;
}

t.test('decoders: every generated valid record round-trips to the same name, value, timestamp and dimensions', async (t) => {
  const monasca = new Decoder(settings());
  check(t, 'monasca', 20_000, fc.property(nonEmpty, finite, epochMs, dims, fc.option(storable), fc.option(storable), (name, value, ts, ds, tenant, region) => {
    const meta: Array<[string, string]> = [];
    if (tenant !== null) meta.push(['tenantId', tenant]);
    if (region !== null) meta.push(['region', region]);
    const msg = `{"metric":{"name":${JSON.stringify(name)},"dimensions":${jsonObject(ds)},"timestamp":${JSON.stringify(ts)},"value":${JSON.stringify(value)},"value_meta":{}},"meta":${jsonObject(meta)},"creation_time":0}`;
    const all: Array<[string, string]> = [...ds];
    if (tenant !== null) all.push(['_tenant_id', tenant]);
    if (region !== null) all.push(['_region', region]);
    return roundTrips(monasca, msg, name, value, ts, null, sortedDedup(all));
  }));

  const ceilometer = new Decoder(settings({ format: { kind: 'ceilometer' } }));
  const fields = ['resource_id', 'project_id', 'user_id', 'source'] as const;
  check(t, 'ceilometer', 15_000, fc.property(nonEmpty, finite, fc.integer({ min: 0, max: LAST_EVENT_MS }), fc.boolean(), fc.option(storable), fc.array(fc.option(storable), { minLength: 4, maxLength: 4 }), (name, value, ms, zulu, unit, vals) => {
    const iso = new Date(ms).toISOString();
    const pairs: Array<[string, string]> = [];
    const o: string[] = [`"counter_name":${JSON.stringify(name)}`, `"counter_volume":${JSON.stringify(value)}`, `"timestamp":${JSON.stringify(zulu ? iso : iso.slice(0, -1))}`, `"counter_type":"gauge"`];
    if (unit !== null) o.push(`"counter_unit":${JSON.stringify(unit)}`);
    fields.forEach((f, i) => {
      const v = vals[i];
      if (v !== null && v !== undefined) {
        o.push(`${JSON.stringify(f)}:${JSON.stringify(v)}`);
        pairs.push([f, v]);
        // The sample's project is its tenant: the statistics API scopes project tokens by _tenant_id.
        if (f === 'project_id') pairs.push(['_tenant_id', v]);
      }
    });
    pairs.push(['counter_type', 'gauge']);
    return roundTrips(ceilometer, `{${o.join(',')}}`, name, value, ms, unit, sortedDedup(pairs));
  }));

  const mapping: JsonMapping = {
    name: { path: ['verb', 'id'], text: 'verb.id' },
    value: { path: ['result', 'score'], text: 'result.score' },
    timestamp: { path: ['timestamp'], text: 'timestamp' },
    unit: { path: ['unit'], text: 'unit' },
    dimensions: [
      { name: 'actor', path: ['actor', 'mbox'], text: 'actor.mbox' },
      { name: '__proto__', path: ['items', '0'], text: 'items.0' },
    ],
  };
  const json = new Decoder(settings({ format: { kind: 'json', mapping } }));
  check(t, 'json (mapped paths)', 15_000, fc.property(nonEmpty, finite, fc.oneof(epochMs, fc.integer({ min: 0, max: LAST_EVENT_MS }).map((ms) => new Date(ms).toISOString())), fc.option(storable), fc.option(storable), fc.option(storable), (name, value, ts, unit, actor, item) => {
    const msg = `{"verb":{"id":${JSON.stringify(name)}},"result":{"score":${JSON.stringify(value)}},"timestamp":${JSON.stringify(ts)}` +
      `${unit === null ? '' : `,"unit":${JSON.stringify(unit)}`}${actor === null ? '' : `,"actor":{"mbox":${JSON.stringify(actor)}}`},"items":[${item === null ? '' : JSON.stringify(item)}]}`;
    const ds: Array<[string, string]> = [];
    if (actor !== null) ds.push(['actor', actor]);
    if (item !== null) ds.push(['__proto__', item]);
    const tsMs = typeof ts === 'number' ? ts : Date.parse(ts);
    return roundTrips(json, msg, name, value, tsMs, unit, sortedDedup(ds));
  }));
});

t.test('decoders: any bytes never throw out of decodeBatch, and every record is accounted ok or rejected', async (t) => {
  const anyJson = fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? 'null');
  const nearlyMonasca = fc.record({
    name: fc.oneof(nonEmpty, fc.jsonValue({ maxDepth: 1 })),
    value: fc.oneof(finite, fc.jsonValue({ maxDepth: 1 }), fc.constantFrom('1e999', '-1e999', '1e200')),
    timestamp: fc.oneof(epochMs, fc.jsonValue({ maxDepth: 1 }), fc.constantFrom(-1, 1e16, 1e300)),
    dims: fc.oneof(dims.map(jsonObject), fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v) ?? 'null')),
  }).map(({ name, value, timestamp, dims: d }) => {
    const v = typeof value === 'string' && /^-?1e\d+$/.test(value) ? value : JSON.stringify(value) ?? 'null';
    return `{"metric":{"name":${JSON.stringify(name) ?? 'null'},"value":${v},"timestamp":${JSON.stringify(timestamp) ?? 'null'},"dimensions":${d}}}`;
  });
  const message = fc.oneof(
    fc.uint8Array({ maxLength: 64 }),
    anyJson.map((s) => Buffer.from(s)),
    nearlyMonasca.map((s) => Buffer.from(s)),
    fc.array(nearlyMonasca, { maxLength: 4 }).map((a) => Buffer.from(`[${a.join(',')}]`)),
    fc.tuple(nearlyMonasca, fc.integer({ min: 0, max: 200 })).map(([s, cut]) => Buffer.from(s).subarray(0, cut)),
  );
  for (const format of ['monasca', 'ceilometer'] as const) {
    const decoder = new Decoder(settings({ format: { kind: format }, maxMessageBytes: 48, maxDimensions: 3, maxFutureMs: 86_400_000 }));
    check(t, `${format}: arbitrary messages`, 10_000, fc.property(fc.array(message, { maxLength: 8 }), (msgs) => {
      const { buffer, offsets } = pack(msgs);
      const r = decoder.decodeBatch(buffer, offsets, Date.UTC(2025, 0, 1));
      // Expected records per message: the elements of a JSON array, else one.
      let expected = 0;
      for (const m of msgs) {
        let n = 1;
        if (m.length > 0 && m.length <= 48 && isUtf8(m)) {
          try {
            const v: unknown = JSON.parse(Buffer.from(m).toString('utf8'));
            if (Array.isArray(v)) n = v.length;
          } catch {
            // not JSON: one rejected record
          }
        }
        expected += n;
      }
      let cellCount = 0;
      for (let o = 0; o < r.cells.length; o += CELL.STRIDE) cellCount += r.cells[o + CELL.COUNT]!;
      const rejectedMsgs = new Set(r.rejects.map((x) => x.msg));
      return r.records === expected && r.ok + r.rejects.length === r.records && cellCount === r.ok &&
        [...rejectedMsgs].every((i) => i >= 0 && i < msgs.length) &&
        r.rejects.every((x) => typeof x.detail === 'string' && x.detail.length > 0);
    }));
  }
});

t.test('series keys: parseSeriesKey(seriesKey(...)) round-trips, and distinct series give distinct keys', async (t) => {
  const unit = fc.option(text);
  const pairs = fc.array(fc.tuple(text, text), { maxLength: 8 });
  check(t, 'round-trip, all dimensions (sorted, first of a repeated name kept)', 15_000, fc.property(text, unit, pairs, (name, u, ds) => {
    const id = parseSeriesKey(seriesKey(name, u, ds, null));
    return id.name === name && id.unit === u && JSON.stringify(id.groupby) === JSON.stringify(sortedDedup(ds));
  }));
  check(t, 'round-trip, GROUP_BY (absent dimensions are null)', 10_000, fc.property(text, unit, pairs, fc.uniqueArray(text, { maxLength: 4 }), (name, u, ds, groupBy) => {
    const id = parseSeriesKey(seriesKey(name, u, ds, groupBy));
    const want = groupBy.map((g) => [g, ds.find((d) => d[0] === g)?.[1] ?? null]);
    return id.name === name && id.unit === u && JSON.stringify(id.groupby) === JSON.stringify(want);
  }));
  check(t, 'injective: different series, different keys', 10_000, fc.property(fc.tuple(text, unit, pairs), fc.tuple(text, unit, pairs), ([n1, u1, d1], [n2, u2, d2]) => {
    const same = n1 === n2 && u1 === u2 && JSON.stringify(sortedDedup(d1)) === JSON.stringify(sortedDedup(d2));
    return same === (seriesKey(n1, u1, d1, null) === seriesKey(n2, u2, d2, null));
  }));
});

const sample = fc.array(fc.tuple(fc.oneof(fc.double({ min: -1e9, max: 1e9, noNaN: true }), fc.integer({ min: -1000, max: 1000 })), fc.integer({ min: 0, max: 2 ** 40 })), { maxLength: 30 });

function moments(xs: ReadonlyArray<readonly [number, number]>): Moments {
  const m = emptyMoments();
  for (const [v, ts] of xs) addSample(m, v, ts);
  return m;
}

function merged(...ms: Moments[]): Moments {
  const out = emptyMoments();
  for (const m of ms) mergeMoments(out, { ...m });
  return out;
}

/** Equal within floating-point tolerance scaled by the data's magnitude; exact where merging is exact. */
function sameMoments(a: Moments, b: Moments, scale: number): boolean {
  const n = Math.max(a.count, 1);
  const tolMean = 1e-12 * scale * 8 + 1e-300;
  const tolM2 = 1e-11 * n * scale * scale * 8 + 1e-300;
  const tolSum = 1e-13 * n * scale * 8 + 1e-300;
  return a.count === b.count && a.min === b.min && a.max === b.max && a.tsMin === b.tsMin && a.tsMax === b.tsMax &&
    Math.abs(a.mean - b.mean) <= tolMean && Math.abs(a.m2 - b.m2) <= tolM2 && Math.abs(a.sum - b.sum) <= tolSum;
}

const scaleOf = (...xss: ReadonlyArray<ReadonlyArray<readonly [number, number]>>) => Math.max(1, ...xss.flat().map(([v]) => Math.abs(v)));

t.test('statistics: mergeMoments is associative and commutative, and merged partials equal one pass', async (t) => {
  check(t, 'associative: (a+b)+c = a+(b+c)', 8_000, fc.property(sample, sample, sample, (a, b, c) => {
    const [ma, mb, mc] = [moments(a), moments(b), moments(c)];
    return sameMoments(merged(merged(ma, mb), mc), merged(ma, merged(mb, mc)), scaleOf(a, b, c));
  }));
  check(t, 'commutative: a+b = b+a', 8_000, fc.property(sample, sample, (a, b) => sameMoments(merged(moments(a), moments(b)), merged(moments(b), moments(a)), scaleOf(a, b))));
  check(t, 'partials merged = one addSample pass over everything', 8_000, fc.property(fc.array(sample, { maxLength: 6 }), (parts) => {
    return sameMoments(merged(...parts.map(moments)), moments(parts.flat()), scaleOf(...parts));
  }));
});

t.test('sketch: merged sketches equal one sketch of all values; quantiles within the relative accuracy', async (t) => {
  const magnitude = fc.double({ min: 1e-9, max: 1e12, noNaN: true });
  const value = fc.oneof({ weight: 6, arbitrary: magnitude }, { weight: 3, arbitrary: magnitude.map((v) => -v) }, { weight: 1, arbitrary: fc.constant(0) });
  const alpha = fc.constantFrom(0.001, 0.01, 0.02, 0.05);
  check(t, 'merge = one sketch, quantiles within alpha', 8_000, fc.property(alpha, fc.array(fc.array(value, { maxLength: 40 }), { minLength: 1, maxLength: 5 }), (a, parts) => {
    const one = new Sketch(a);
    for (const v of parts.flat()) one.add(v);
    const m = new Sketch(a);
    for (const p of parts) {
      const s = new Sketch(a);
      for (const v of p) s.add(v);
      m.merge(s);
    }
    const sameBuckets = m.count === one.count && m.zero === one.zero &&
      JSON.stringify([...m.pos].sort((x, y) => x[0] - y[0])) === JSON.stringify([...one.pos].sort((x, y) => x[0] - y[0])) &&
      JSON.stringify([...m.neg].sort((x, y) => x[0] - y[0])) === JSON.stringify([...one.neg].sort((x, y) => x[0] - y[0]));
    if (!sameBuckets) return false;
    const all = parts.flat().sort((x, y) => x - y);
    if (all.length === 0) return Number.isNaN(m.quantile(0.5));
    for (const q of [0, 0.01, 0.25, 0.5, 0.75, 0.9, 0.99, 1]) {
      const exact = all[Math.floor(q * (all.length - 1))]!;
      const est = m.quantile(q);
      if (Math.abs(est - exact) > a * Math.abs(exact) * (1 + 1e-9) + 1e-300) return false;
    }
    return true;
  }));
});

t.test('in all', async (t) => {
  t.ok(total >= 100_000, `${total} generated cases in all (>= 100,000)`);
});
