// The byte-level fast path (src/core/scan) against the slow path (JSON.parse + extractor + interner):
// random streams of Monasca, Ceilometer and mapped JSON (FORMAT=json) messages, valid ones in varied shapes, key orders,
// whitespace and number forms, and hostile ones (truncations, escapes, NUL, lone surrogates,
// non-ASCII, invalid UTF-8, duplicate keys, "__proto__", deep nesting, huge values), decoded batch
// after batch by a decoder with the fast path and one without: every result (records, series keys,
// partials bit for bit, rejects with their details) must be the same, and the fast path must have
// taken most of the valid messages.
import t, { type Test } from 'tap';
import { Decoder } from '../../src/core/decode.js';
import type { DecodeResult, DecoderSettings } from '../../src/core/messages.js';
import type { JsonMapping } from '../../src/core/formats/spec.js';
import { generatePoints } from '../../src/sources/generator.js';
import { xapiStatements } from '../../src/sources/redis/xapi.js';
import { pack, settings } from '../fixtures/gen.js';

const SEED = Number(process.env['PROPERTY_SEED'] ?? '20261201');

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

class Gen {
  readonly r: () => number;
  constructor(seed: number) {
    this.r = prng(seed);
  }
  int(n: number): number {
    return Math.floor(this.r() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  chance(p: number): boolean {
    return this.r() < p;
  }
  ws(): string {
    return this.chance(0.8) ? '' : this.pick([' ', '\n', '\t', '\r\n ', '  ']);
  }
  /** A JSON object as text from (key text, value text) members, keys in the order given. */
  obj(members: ReadonlyArray<readonly [string, string]>): string {
    if (members.length === 0) return `{${this.ws()}}`;
    return `{${this.ws()}${members.map(([k, v]) => `${k}${this.ws()}:${this.ws()}${v}${this.ws()}`).join(`,${this.ws()}`)}}`;
  }
  shuffle<T>(xs: T[]): T[] {
    for (let i = xs.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [xs[i], xs[j]] = [xs[j]!, xs[i]!];
    }
    return xs;
  }
}

const q = (s: string): string => JSON.stringify(s);
// Strings as JSON text: mostly plain, some with escapes (\u0041 = "A", NUL, a lone surrogate, \"), non-ASCII.
const NAMES = [q('cpu'), q('cpu'), q('mem'), q('disk.io'), q(''), q('é'), '"cp\\u0075"', '"a\\u0000b"', '"\\ud800"', q('x'.repeat(1100)), '5', 'null', q('😀')];
const DIM_KEYS = [q('host'), q('zone'), q('1'), q('10'), q('2'), q('__proto__'), q('_tenant_id'), q('_region'), q(''), q('é'), q('a b'), '"ho\\u0073t"', q('k'.repeat(1100))];
const DIM_VALUES = [q('a'), q('b'), q('c'), q('1'), '5', '-0', '1.50', 'true', 'null', '{}', '[]', q('v'.repeat(1100)), '"\\u0041"', q('é'), '"\\ud83d"', '"a\\u0000"'];
const VALUES = ['1', '42', '12.5', '1.0', '-0', '0', '-7', '1e2', '1E+2', '12.345e-3', '0.1', '1e400', '-1e400', '1e-400', '123456789012345678901234', '9007199254740993', '1e150', '1e151',
  '1.5e-7', '00', '01', '-', '1.', '.5', '"12"', 'null', 'true', '[]', '{}', '2.5e+22', '3e22', '3e23', '0.000001', '-0.0', '1e-22', '7e-23'];
const META_VALUES = [q('t1'), q('t2'), q('RegionOne'), '5', 'null', '{}', '"\\u0041"', q('é'), q('m'.repeat(1100))];

function deep(g: Gen): string {
  const n = g.pick([3, 20, 40, 70]);
  return g.chance(0.5) ? `${'['.repeat(n)}${']'.repeat(n)}` : `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
}

function extra(g: Gen): string {
  return g.pick(['{}', '0', q('x'), '[1,2,{"a":null}]', 'false', deep(g), '{"a":{"b":[true,false,null,-1.5e3]}}', q('y'.repeat(2000))]);
}

function monasca(g: Gen): string {
  const dims: Array<[string, string]> = [];
  const nd = g.int(5);
  for (let i = 0; i < nd; i++) dims.push([g.pick(DIM_KEYS.slice(0, g.chance(0.9) ? 3 : DIM_KEYS.length)), g.pick(DIM_VALUES.slice(0, g.chance(0.9) ? 3 : DIM_VALUES.length))]);
  const metric: Array<[string, string]> = [];
  if (g.chance(0.97)) metric.push([q('name'), g.pick(NAMES.slice(0, g.chance(0.9) ? 4 : NAMES.length))]);
  if (g.chance(0.97)) metric.push([q('value'), g.chance(0.8) ? String(g.int(1000)) : g.pick(VALUES)]);
  if (g.chance(0.97)) {
    metric.push([q('timestamp'), g.chance(0.8) ? String(1_700_000_000_000 + g.int(600_000))
      : g.pick(['1700000000000.5', '"2024-01-01T00:00:00Z"', 'null', '-1', '253402300799999', '253402260000000', '1e13', '9999999999999999', '1700000500000e0', '-0', '1800000000000'])]);
  }
  if (g.chance(0.9)) metric.push([q('dimensions'), g.chance(0.95) ? g.obj(dims) : g.pick(['null', '[]', q('d'), '5'])]);
  if (g.chance(0.5)) metric.push([q('value_meta'), extra(g)]);
  if (g.chance(0.03)) metric.push(g.pick([[q('name'), q('mem')], [q('value'), '3'], [q('dimensions'), '{}'], [q('timestamp'), '1700000000001']]) as [string, string]);
  const meta: Array<[string, string]> = [];
  if (g.chance(0.9)) meta.push([q('tenantId'), g.pick(META_VALUES.slice(0, g.chance(0.9) ? 2 : META_VALUES.length))]);
  if (g.chance(0.9)) meta.push([q('region'), g.pick(META_VALUES.slice(0, g.chance(0.9) ? 3 : META_VALUES.length))]);
  if (g.chance(0.03)) meta.push([q('tenantId'), q('t3')]);
  const top: Array<[string, string]> = [[q('metric'), g.chance(0.98) ? g.obj(g.shuffle(metric)) : g.pick(['null', '[]', '5'])]];
  if (g.chance(0.95)) top.push([q('meta'), g.chance(0.95) ? g.obj(g.shuffle(meta)) : g.pick(['null', '[]', q('m')])]);
  if (g.chance(0.7)) top.push([q('creation_time'), '1700000000']);
  if (g.chance(0.05)) top.push([q('__proto__'), '{"metric":1}']);
  if (g.chance(0.02)) top.push([q('metric'), '{"name":"dup","value":1,"timestamp":1700000000000}']);
  if (g.chance(0.02)) top.push([q('meta'), '{"tenantId":"dup"}']);
  return `${g.ws()}${g.obj(g.shuffle(top))}${g.ws()}`;
}

const ISO = ['2024-01-01T00:00:00', '2024-01-01T00:00:00.123456', '2024-01-01T00:00:00.5', '2024-01-01T00:00:00.12', '2024-01-01T00:00:00Z', '2024-01-01T00:00:00.123Z',
  '2024-01-01T00:00:00+00:00', '2024-01-01T00:00:00+0100', '2024-01-01 00:00:00', '2024-02-30T00:00:00', '2024-02-29T12:00:00', '2023-02-29T12:00:00', '1969-12-31T23:59:59',
  '2024-01-01T24:00:00', '2024-01-01T23:59:60', '2024-01-01T00:60:00', '2024-01-01T00:00:00.1234567891', '2024-01-01T00:00:00.123456789', '0050-01-01T00:00:00',
  '9999-12-31T23:59:59.999', '2024-01-01T00:00:00z', '2024-01-01T00:00', '2024-01-01', '2024-13-01T00:00:00', '2024-00-10T00:00:00', '2024-04-31T00:00:00', '2000-02-29T00:00:00',
  '1900-02-29T00:00:00', '2024-1-01T00:00:00', '2024-01-01T00:00:00.', '2024-01-01T00:00:00Z ', '2030-01-01T00:00:00'];

function ceilometer(g: Gen): string {
  const m: Array<[string, string]> = [];
  if (g.chance(0.97)) m.push([q('counter_name'), g.pick(NAMES.slice(0, g.chance(0.9) ? 4 : NAMES.length))]);
  if (g.chance(0.97)) m.push([q('counter_volume'), g.chance(0.8) ? String(g.int(1e6) / 100) : g.pick(VALUES)]);
  if (g.chance(0.97)) {
    const base = new Date(Date.UTC(2024, 0, 1) + g.int(7_200_000)).toISOString().slice(0, 23);
    m.push([q('timestamp'), g.chance(0.7) ? q(`${base}${g.pick(['000', '', 'Z', '123'])}`) : g.chance(0.8) ? q(g.pick(ISO)) : g.pick(['null', '1700000000000', '"\\u0032024-01-01T00:00:00"'])]);
  }
  if (g.chance(0.9)) m.push([q('counter_unit'), g.pick([q('%'), q('B'), 'null', '5', q('é'), '"\\u0000"', q('u'.repeat(1100))].slice(0, g.chance(0.9) ? 3 : 7))]);
  for (const f of ['resource_id', 'project_id', 'user_id', 'source']) {
    if (g.chance(0.9)) m.push([q(f), g.pick(DIM_VALUES.slice(0, g.chance(0.9) ? 3 : DIM_VALUES.length))]);
  }
  if (g.chance(0.5)) m.push([q('counter_type'), g.pick([q('gauge'), q('delta'), 'null'])]);
  if (g.chance(0.5)) m.push([q('resource_metadata'), extra(g)]);
  if (g.chance(0.03)) m.push(g.pick([[q('counter_name'), q('mem')], [q('counter_volume'), '3'], [q('resource_id'), q('z')], [q('timestamp'), q('2024-01-01T00:00:01')]]) as [string, string]);
  if (g.chance(0.05)) m.push([q('__proto__'), '{"counter_name":"p"}']);
  // A key of a field's length with one letter changed is some other key: the fast path tells keys apart
  // by length and one letter, then compares the one candidate in full.
  if (g.chance(0.1)) m.push([q(nearMiss(g, g.pick(CEILOMETER_KEYS))), g.pick([q('mem'), '3', q('z'), q('2024-01-01T00:00:01'), q('gauge')])]);
  return `${g.ws()}${g.obj(g.shuffle(m))}${g.ws()}`;
}

const CEILOMETER_KEYS = ['counter_name', 'counter_unit', 'counter_type', 'counter_volume', 'timestamp', 'resource_id', 'project_id', 'user_id', 'source'];

/** key with one letter replaced by another (never the same letter). */
function nearMiss(g: Gen, key: string): string {
  const i = g.int(key.length);
  const c = String.fromCharCode(0x61 + ((key.charCodeAt(i) - 0x61 + 1 + g.int(25)) % 26 + 26) % 26);
  return key.slice(0, i) + (c === key[i] ? 'X' : c) + key.slice(i + 1);
}

const XAPI_MAPPING: JsonMapping = {
  name: { path: ['verb', 'id'], text: 'verb.id' },
  value: { path: ['result', 'score', 'scaled'], text: 'result.score.scaled' },
  timestamp: { path: ['timestamp'], text: 'timestamp' },
  unit: null,
  dimensions: [{ name: 'course', path: ['context', 'extensions', 'course'], text: 'context.extensions.course' }, { name: 'org', path: ['context', 'platform'], text: 'context.platform' }],
};

/** xAPI-shaped statements: the paths present or not, objects or not on the way, arrays, repeats, other keys. */
function xapi(g: Gen): string {
  const onPath = (leaf: string): string => g.chance(0.9) ? leaf : g.pick(['null', '5', q('s'), '[]', `[${leaf}]`, '{}']);
  const scaled = g.chance(0.8) ? String(g.int(1000) / 1000) : g.pick(VALUES);
  const score = g.chance(0.95) ? g.obj(g.shuffle([[q('scaled'), scaled], ...(g.chance(0.3) ? [[q('raw'), '7'] as [string, string]] : []), ...(g.chance(0.02) ? [[q('scaled'), '0.5'] as [string, string]] : [])])) : onPath('{}');
  const result = g.chance(0.95) ? g.obj(g.shuffle([[q('score'), score], ...(g.chance(0.5) ? [[q('completion'), 'true'] as [string, string]] : [])])) : onPath('{}');
  const verb = g.obj(g.shuffle([[q('id'), g.pick(NAMES.slice(0, g.chance(0.9) ? 4 : NAMES.length))], ...(g.chance(0.5) ? [[q('display'), '{"en-US":"x"}'] as [string, string]] : []), ...(g.chance(0.02) ? [[q('id'), q('dup')] as [string, string]] : [])]));
  const ext = g.obj([[q('course'), g.pick(DIM_VALUES.slice(0, g.chance(0.9) ? 3 : DIM_VALUES.length))]]);
  const context = g.obj(g.shuffle([
    ...(g.chance(0.95) ? [[q('extensions'), onPath(ext)] as [string, string]] : []),
    ...(g.chance(0.9) ? [[q('platform'), g.pick(DIM_VALUES.slice(0, g.chance(0.9) ? 2 : DIM_VALUES.length))] as [string, string]] : []),
    ...(g.chance(0.02) ? [[q('platform'), q('p2')] as [string, string]] : []),
  ]));
  const base = new Date(Date.UTC(2024, 0, 1) + g.int(7_200_000)).toISOString();
  const ts = g.chance(0.6) ? q(base) : g.chance(0.5) ? String(Date.UTC(2024, 0, 1) + g.int(7_200_000)) : g.chance(0.8) ? q(g.pick(ISO)) : g.pick(['null', '-1', '1.5', '"\\u0032024-01-01T00:00:00Z"', '1e400', '{}']);
  const top: Array<[string, string]> = [[q('id'), q('00000000-0000-4000-8000-000000000001')], [q('actor'), '{"objectType":"Agent","account":{"name":"l"}}']];
  if (g.chance(0.97)) top.push([q('verb'), onPath(verb)]);
  if (g.chance(0.97)) top.push([q('result'), result]);
  if (g.chance(0.95)) top.push([q('context'), onPath(context)]);
  if (g.chance(0.97)) top.push([q('timestamp'), ts]);
  if (g.chance(0.5)) top.push([q('version'), q('1.0.3')]);
  if (g.chance(0.03)) top.push(g.pick([[q('timestamp'), q(base)], [q('verb'), '{"id":"v2"}'], [q('context'), '{}']]) as [string, string]);
  if (g.chance(0.03)) top.push([q('__proto__'), '{"verb":{"id":"p"}}']);
  return `${g.ws()}${g.obj(g.shuffle(top))}${g.ws()}`;
}

/** A mapping with constants, a unit, one path under another, one path twice and numbers for event times. */
const ODD_MAPPING: JsonMapping = {
  name: { constant: 'events' },
  value: { constant: 1 },
  timestamp: { path: ['t'], text: 't' },
  unit: { path: ['u'], text: 'u' },
  dimensions: [
    { name: 'a', path: ['a'], text: 'a' },
    { name: 'ab', path: ['a', 'b'], text: 'a.b' },
    { name: 'again', path: ['a', 'b'], text: 'a.b' },
    { name: 'first', path: ['items', '0'], text: 'items.0' },
    { name: 'time', path: ['t'], text: 't' },
    { name: 'n', path: ['n'], text: 'n' },
  ],
};

function odd(g: Gen): string {
  const m: Array<[string, string]> = [];
  // Few event times: "t" is a dimension too, and series must come back for signatures to be taken.
  if (g.chance(0.97)) m.push([q('t'), g.chance(0.85) ? String(1_700_000_000_000 + g.int(20) * 1000) : g.pick(['1700000000000.5', q('2023-11-14T22:13:20Z'), 'null', '-1', q('x'), '1e13'])]);
  if (g.chance(0.7)) m.push([q('u'), g.chance(0.9) ? g.pick([q('B'), q('%')]) : g.pick(['null', '5', '{}', q('u'.repeat(1100))])]);
  // An object at "a" is a dimension of the wrong type (rejected), read on the way to "a.b" all the same.
  if (g.chance(0.8)) m.push([q('a'), g.chance(0.25) ? g.obj(g.chance(0.9) ? [[q('b'), g.pick(DIM_VALUES.slice(0, 3))]] : []) : g.pick(DIM_VALUES.slice(0, g.chance(0.9) ? 3 : DIM_VALUES.length))]);
  // Numbers and words as dimension values, some alike but for their first or last character: the signature holds every byte.
  if (g.chance(0.6)) m.push([q('n'), g.pick(['15', '16', '25', '1', '10', '11', '150', 'true', 'false', '-1', '-2'])]);
  if (g.chance(0.4)) m.push([q('items'), g.pick(['[1,2]', '["x"]', '{"0":"y"}', '{"0":"y"}', '{"0":{"z":1}}', '[]', 'null'])]);
  if (g.chance(0.03)) m.push([q('a'), '{"b":"dup"}']);
  return `${g.ws()}${g.obj(g.shuffle(m))}${g.ws()}`;
}

const HOSTILE_BYTES = [0x00, 0x80, 0xff, 0x5c, 0x22, 0x7b, 0x7d, 0x2c, 0x20, 0x3a, 0x0a, 0xc3, 0xed, 0x31, 0x2d, 0x5b];

/** A message as bytes, sometimes mutated, sometimes an array of records or one repeated. */
function message(g: Gen, make: (g: Gen) => string): Buffer {
  const roll = g.r();
  if (roll < 0.04) return Buffer.from(`[${make(g)},${g.ws()}${make(g)}]`);
  if (roll < 0.05) return Buffer.from(g.pick(['', ' ', '[]', 'null', '"x"', '{}', '\uFEFF{}']));
  let b = Buffer.from(make(g));
  if (roll < 0.2) {
    const at = g.int(b.length + 1);
    switch (g.int(4)) {
      case 0:
        b = b.subarray(0, at);
        break;
      case 1:
        b = Buffer.concat([b.subarray(0, at), Buffer.from([g.pick(HOSTILE_BYTES)]), b.subarray(at)]);
        break;
      case 2:
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]);
        break;
      default:
        b = Buffer.from(b);
        if (at < b.length) b[at] = g.pick(HOSTILE_BYTES);
    }
  }
  return b;
}

function same(t: Test, fast: DecodeResult, slow: DecodeResult, what: string): boolean {
  const { decodeSeconds: _a, cells: fc, ...f } = fast;
  const { decodeSeconds: _b, cells: sc, ...s } = slow;
  let ok = JSON.stringify(f) === JSON.stringify(s) && fc.length === sc.length;
  for (let i = 0; ok && i < fc.length; i++) ok = Object.is(fc[i], sc[i]);
  if (!ok) t.same({ ...f, cells: Array.from(fc) }, { ...s, cells: Array.from(sc) }, what);
  return ok;
}

function run(t: Test, label: string, s: DecoderSettings, make: (g: Gen) => string, seed: number, batches: number, nowMs: number, opts: { maxDictionary?: number } = {}): void {
  const g = new Gen(seed);
  const fast = new Decoder(s, opts);
  const slow = new Decoder(s, { ...opts, scan: false });
  // A pool of messages re-sent with fresh ones: known series are what the fast path takes.
  const pool: Buffer[] = [];
  let mismatches = 0;
  let records = 0;
  let accepted = 0;
  for (let b = 0; b < batches; b++) {
    const msgs: Buffer[] = [];
    const n = 1 + g.int(60);
    for (let i = 0; i < n; i++) {
      if (pool.length > 0 && g.chance(0.75)) msgs.push(g.pick(pool));
      else {
        const m = message(g, make);
        if (pool.length < 400) pool.push(m);
        else pool[g.int(pool.length)] = m;
        msgs.push(m);
      }
    }
    const now = nowMs + b * 1000;
    const { buffer, offsets } = pack(msgs);
    const r = fast.decodeBatch(buffer.slice(0), offsets.slice(), now);
    const r0 = slow.decodeBatch(buffer.slice(0), offsets.slice(), now);
    records += r0.records;
    accepted += r0.ok;
    if (!same(t, r, r0, `${label} batch ${b}: fast path = slow path`)) {
      mismatches++;
      if (mismatches > 3) break;
    }
  }
  t.equal(mismatches, 0, `${label}: ${batches} batches, ${records} records (${accepted} accepted), fast path = slow path`);
  // A small dictionary starts over every few batches, and the fast path's signatures with it.
  if (opts.maxDictionary === undefined) {
    t.ok(fast.scanned >= accepted / 2, `${label}: the fast path took ${fast.scanned} of the ${accepted} accepted records (at least half expected)`);
  } else {
    t.ok(fast.scanned > 0, `${label}: the fast path took ${fast.scanned} of the ${accepted} accepted records`);
  }
  t.equal(slow.scanned, 0, `${label}: scan: false takes no fast path`);
}

// Wall clocks (advancing 1 s a batch) just after the generated event times: MAX_FUTURE_SECONDS cuts some.
const MONASCA_NOW = 1_700_000_300_000;
const CEILOMETER_NOW = Date.UTC(2024, 0, 1, 1);

t.test('monasca: fast path = slow path over random and hostile messages', async (t) => {
  run(t, 'monasca', settings({ maxFutureMs: 120_000 }), monasca, SEED, 400, MONASCA_NOW);
  run(t, 'monasca, small limits', settings({ maxDimensions: 3, maxNameBytes: 16, maxDimensionBytes: 8, maxSeriesKeyBytes: 80, maxMessageBytes: 300, windowMs: 10_000 }), monasca, SEED + 1, 300, MONASCA_NOW);
  run(t, 'monasca, group-by, sketches, small dictionary', settings({ groupBy: ['host', '_tenant_id', '1'], sketchAccuracy: 0.01 }), monasca, SEED + 2, 300, MONASCA_NOW, { maxDictionary: 30 });
});

t.test('ceilometer: fast path = slow path over random and hostile messages', async (t) => {
  const c = { kind: 'ceilometer' } as const;
  run(t, 'ceilometer, GROUP_BY=resource_id', settings({ format: c, groupBy: ['resource_id'], windowMs: 3_600_000, maxFutureMs: 3_600_000 }), ceilometer, SEED + 3, 400, CEILOMETER_NOW);
  run(t, 'ceilometer, all dimensions', settings({ format: c }), ceilometer, SEED + 4, 300, CEILOMETER_NOW);
  run(t, 'ceilometer, small limits', settings({ format: c, maxDimensions: 2, maxNameBytes: 4, maxDimensionBytes: 4, maxSeriesKeyBytes: 60, maxMessageBytes: 250 }), ceilometer, SEED + 5, 300, CEILOMETER_NOW, { maxDictionary: 20 });
});

t.test('FORMAT=json: fast path = slow path over random and hostile messages', async (t) => {
  const xapiFormat = { kind: 'json', mapping: XAPI_MAPPING } as const;
  run(t, 'json, the xAPI mapping', settings({ format: xapiFormat, maxFutureMs: 3_600_000 }), xapi, SEED + 7, 400, CEILOMETER_NOW);
  run(t, 'json, the xAPI mapping, group-by, small limits, small dictionary', settings({ format: xapiFormat, groupBy: ['course'], maxNameBytes: 8, maxDimensionBytes: 6, maxMessageBytes: 400 }), xapi, SEED + 8, 300, CEILOMETER_NOW, { maxDictionary: 20 });
  run(t, 'json, constants, a unit, nested and repeated paths', settings({ format: { kind: 'json', mapping: ODD_MAPPING }, maxFutureMs: 120_000 }), odd, SEED + 9, 300, MONASCA_NOW);
});

t.test('FORMAT=json: the fast path takes the xAPI workload\'s statements', async (t) => {
  const s = settings({ format: { kind: 'json', mapping: XAPI_MAPPING } });
  const fast = new Decoder(s);
  const slow = new Decoder(s, { scan: false });
  const sts = [...xapiStatements({ count: 4000, learners: 50, courses: 5, startMs: Date.UTC(2024, 0, 1), stepMs: 250, seed: 3 })].map((x) => Buffer.from(x.json));
  let mismatches = 0;
  for (let i = 0; i < sts.length; i += 500) {
    const { buffer, offsets } = pack(sts.slice(i, i + 500));
    if (!same(t, fast.decodeBatch(buffer.slice(0), offsets.slice(), Date.UTC(2024, 0, 2)), slow.decodeBatch(buffer.slice(0), offsets.slice(), Date.UTC(2024, 0, 2)), `batch at ${i}`)) mismatches++;
  }
  t.equal(mismatches, 0, 'fast path = slow path');
  // 25 series (5 verbs x 5 courses): each learnt once, then taken without JSON.parse.
  t.ok(fast.scanned >= sts.length - 100, `the fast path took ${fast.scanned} of ${sts.length} statements`);
});

t.test('the generator\'s stream (runs of one agent\'s dimensions), partly mutated: fast path = slow path', async (t) => {
  const g = new Gen(SEED + 6);
  const s = settings({ maxFutureMs: 120_000 });
  const fast = new Decoder(s);
  const slow = new Decoder(s, { scan: false });
  let batch: Buffer[] = [];
  let mismatches = 0;
  let accepted = 0;
  let n = 0;
  const flush = (): void => {
    const { buffer, offsets } = pack(batch);
    const r = fast.decodeBatch(buffer.slice(0), offsets.slice(), 1_581_424_933_000 + n * 10);
    const r0 = slow.decodeBatch(buffer.slice(0), offsets.slice(), 1_581_424_933_000 + n * 10);
    accepted += r0.ok;
    if (!same(t, r, r0, `batch ending at point ${n}`)) mismatches++;
    batch = [];
  };
  for (const p of generatePoints({ count: 12_000, metrics: 200, hosts: 5, intervalMs: 30_000, startMs: 1_581_424_933_000, seed: 7 })) {
    let b = Buffer.from(p.json);
    if (g.chance(0.1)) {
      // Mostly inside or right after the dimensions: where a known text is taken without scanning.
      const at = b.indexOf('"timestamp"') + g.int(5) - 4;
      b = g.chance(0.5) ? Buffer.concat([b.subarray(0, at), Buffer.from([g.pick(HOSTILE_BYTES)]), b.subarray(at)]) : b.subarray(0, at);
    }
    batch.push(b);
    if (++n % 1000 === 0) flush();
  }
  t.equal(mismatches, 0, `${n} points, ${accepted} accepted: fast path = slow path`);
  t.ok(fast.scanned >= accepted * 0.8, `the fast path took ${fast.scanned} of the ${accepted} accepted records`);
});

t.test('a long run of new series (the fast path goes sparse), then known ones: results equal, and the fast path comes back', async (t) => {
  const s = settings();
  const fast = new Decoder(s);
  const slow = new Decoder(s, { scan: false });
  const msg = (name: string, i: number): string =>
    `{"metric":{"name":"${name}","dimensions":{"host":"h${i % 7}","zone":"z"},"timestamp":${1_700_000_000_000 + i},"value":${i % 100}},"meta":{"tenantId":"t","region":"r"}}`;
  let mismatches = 0;
  const run = (names: (i: number) => string, from: number, to: number): { ok: number; scanned: number } => {
    const before = fast.scanned;
    let ok = 0;
    for (let b = from; b < to; b += 1000) {
      const { buffer, offsets } = pack(Array.from({ length: 1000 }, (_, k) => msg(names(b + k), b + k)));
      const r = fast.decodeBatch(buffer.slice(0), offsets.slice(), 0);
      const r0 = slow.decodeBatch(buffer.slice(0), offsets.slice(), 0);
      ok += r0.ok;
      if (!same(t, r, r0, `batch at ${b}`)) mismatches++;
    }
    return { ok, scanned: fast.scanned - before };
  };
  const fresh = run((i) => `new.${i}`, 0, 40_000);
  t.equal(fresh.scanned, 0, `${fresh.ok} records of new series: none known`);
  const known = run((i) => `known.${i % 500}`, 40_000, 100_000);
  t.equal(mismatches, 0, 'fast path = slow path throughout');
  t.ok(known.scanned >= known.ok / 2, `then 500 series over and over: the fast path took ${known.scanned} of ${known.ok}`);
});

t.test('ceilometer: a key one letter away from a field is another key, in every position', async (t) => {
  // Each field's key with each letter replaced, in a message beside one with the true key and the
  // same value: with every dimension in the series, a near miss taken for the field would give both
  // messages one signature, so the second would get the first's series.
  const value: Record<string, string> = { counter_name: q('cpu'), counter_unit: q('%'), counter_type: q('gauge'), counter_volume: '3', timestamp: q('2024-01-01T00:10:00'), resource_id: q('r1'), project_id: q('p1'), user_id: q('u1'), source: q('s1') };
  const base = (skip: string): Array<[string, string]> => CEILOMETER_KEYS.filter((k) => k !== skip).map((k) => [q(k), value[k]!]);
  const msgs: Buffer[] = [];
  for (const key of CEILOMETER_KEYS) {
    for (let i = 0; i < key.length; i++) {
      for (const c of ['a', 'z', 'X', '_']) {
        if (key[i] === c) continue;
        const near = key.slice(0, i) + c + key.slice(i + 1);
        // The true key's message is decoded first and taught to the fast path; then the near miss twice.
        msgs.push(Buffer.from(new Gen(0).obj(base(''))));
        msgs.push(Buffer.from(new Gen(0).obj([...base(key), [q(near), value[key]!]])));
        msgs.push(Buffer.from(new Gen(0).obj([...base(key), [q(near), value[key]!]])));
      }
    }
  }
  const s = settings({ format: { kind: 'ceilometer' }, maxFutureMs: 0 });
  const fast = new Decoder(s);
  const slow = new Decoder(s, { scan: false });
  const { buffer, offsets } = pack(msgs);
  const r = fast.decodeBatch(buffer.slice(0), offsets.slice(), CEILOMETER_NOW);
  const r0 = slow.decodeBatch(buffer.slice(0), offsets.slice(), CEILOMETER_NOW);
  t.ok(same(t, r, r0, 'near-miss keys: fast path = slow path'), `${msgs.length} messages: fast path = slow path`);
  t.ok(fast.scanned > msgs.length / 2, `the fast path took ${fast.scanned} of ${msgs.length} messages`);
});
