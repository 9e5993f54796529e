import t from 'tap';
import { Decoder } from '../../src/core/decode.js';
import type { FormatSpec } from '../../src/core/formats/index.js';
import { CELL, type DecodeResult, type DecoderSettings, type RejectReason } from '../../src/core/messages.js';
import { groupbyObject, parseSeriesKey, type SeriesIdentity } from '../../src/core/series.js';
import { monascaRecord, pack, settings } from '../fixtures/gen.js';

/** The subtest type (the last overload of t.test takes just the callback). */
type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

const NOW = Date.UTC(2020, 1, 11, 12, 45, 0);
const TS = Date.UTC(2020, 1, 11, 12, 42, 13, 123);
const WINDOW_MS = 60_000;

const MONASCA = settings();
const CEILOMETER = settings({ format: { kind: 'ceilometer' } });
const JSON_FORMAT: FormatSpec = {
  kind: 'json',
  mapping: {
    name: { path: ['verb', 'id'], text: 'verb.id' },
    value: { path: ['result', 'score', 'raw'], text: 'result.score.raw' },
    timestamp: { path: ['timestamp'], text: 'timestamp' },
    unit: { constant: 'points' },
    dimensions: [
      { name: 'actor', path: ['actor', 'mbox'], text: 'actor.mbox' },
      { name: 'object', path: ['object', 'id'], text: 'object.id' },
      { name: 'first_item', path: ['items', '0', 'sku'], text: 'items.0.sku' },
    ],
  },
};
const JSON_SETTINGS = settings({ format: JSON_FORMAT });

function run(s: DecoderSettings, messages: ReadonlyArray<string | Uint8Array>, nowMs = NOW): DecodeResult {
  const { buffer, offsets } = pack(messages);
  return new Decoder(s).decodeBatch(buffer, offsets, nowMs);
}

interface Cell {
  id: SeriesIdentity;
  windowStart: number;
  count: number;
  mean: number;
  m2: number;
  min: number;
  max: number;
  sum: number;
  tsMin: number;
  tsMax: number;
}

function cellsOf(r: DecodeResult): Cell[] {
  const out: Cell[] = [];
  for (let o = 0; o < r.cells.length; o += CELL.STRIDE) {
    const c = r.cells;
    out.push({
      id: parseSeriesKey(r.series[c[o + CELL.SERIES]!]!),
      windowStart: c[o + CELL.WINDOW_START]!,
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

/** Decodes one message that must be accepted as exactly one record; returns its cell. */
function accept(t: TapTest, s: DecoderSettings, message: string | Uint8Array, label: string, nowMs = NOW): Cell {
  const r = run(s, [message], nowMs);
  t.equal(r.records, 1, `${label}: one record`);
  t.equal(r.ok, 1, `${label}: accepted`);
  t.same(r.rejects, [], `${label}: no rejects`);
  t.equal(r.series.length, 1, `${label}: one series`);
  t.equal(r.cells.length, CELL.STRIDE, `${label}: one cell`);
  const c = cellsOf(r)[0]!;
  t.equal(c.count, 1, `${label}: cell count 1`);
  t.equal(c.m2, 0, `${label}: m2 of one sample`);
  t.equal(c.min, c.mean, `${label}: min = value`);
  t.equal(c.max, c.mean, `${label}: max = value`);
  t.equal(c.sum, c.mean, `${label}: sum = value`);
  t.equal(c.tsMin, c.tsMax, `${label}: one timestamp`);
  t.equal(r.maxEventMs, c.tsMax, `${label}: maxEventMs`);
  t.equal(c.windowStart, Math.floor(c.tsMin / s.windowMs) * s.windowMs, `${label}: window start`);
  return c;
}

/** Decodes one message that must be rejected whole with `reason`, the detail naming `field`. */
function reject(
  t: TapTest,
  s: DecoderSettings,
  message: string | Uint8Array,
  reason: RejectReason,
  field: string | RegExp,
  label: string,
  nowMs = NOW,
): string {
  const r = run(s, [message], nowMs);
  t.equal(r.records, 1, `${label}: counted as one record`);
  t.equal(r.ok, 0, `${label}: not accepted`);
  t.equal(r.cells.length, 0, `${label}: no cells`);
  t.equal(r.series.length, 0, `${label}: no series`);
  t.equal(r.maxEventMs, -Infinity, `${label}: maxEventMs stays -Infinity`);
  t.equal(r.rejects.length, 1, `${label}: one reject`);
  const rej = r.rejects[0];
  if (rej === undefined) return '';
  t.equal(rej.reason, reason, `${label}: reason ${reason} (detail: ${rej.detail})`);
  t.equal(rej.msg, 0, `${label}: msg index`);
  t.equal(rej.elem, -1, `${label}: elem -1 for a whole message`);
  const names = typeof field === 'string' ? rej.detail.startsWith(`${field}:`) : field.test(rej.detail);
  t.ok(names, `${label}: detail names ${String(field)}: ${JSON.stringify(rej.detail)}`);
  return rej.detail;
}

/** JSON.stringify, then replace quoted tokens by raw JSON text (for 1e999 and friends). */
function msg(obj: unknown, raw: Record<string, string> = {}): string {
  let s = JSON.stringify(obj);
  for (const [token, text] of Object.entries(raw)) s = s.replace(JSON.stringify(token), text);
  return s;
}

function metric(over: Record<string, unknown> = {}, top: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    metric: { name: 'cpu.idle_perc', dimensions: { hostname: 'h1', service: 'monitoring' }, timestamp: TS, value: 97.5, value_meta: {}, ...over },
    meta: { tenantId: 't-1', region: 'RegionOne' },
    creation_time: Math.floor(TS / 1000),
    ...top,
  };
}

function without(o: Record<string, unknown>, key: string): Record<string, unknown> {
  const c = { ...o };
  delete c[key];
  return c;
}

function ceilo(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    counter_name: 'cpu_util',
    counter_volume: 12.5,
    counter_unit: '%',
    counter_type: 'gauge',
    resource_id: 'r-1',
    project_id: 'p-1',
    user_id: 'u-1',
    source: 'openstack',
    timestamp: '2020-02-11T12:42:13.123456',
    resource_metadata: { host: 'compute-1', flavor: { id: 'm1' } },
    ...over,
  };
}

function xapi(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    actor: { mbox: 'mailto:a@example.org', name: 'A' },
    verb: { id: 'http://adlnet.gov/expapi/verbs/completed' },
    object: { id: 'http://example.org/course/1' },
    result: { score: { raw: 88 } },
    items: [{ sku: 'sku-7' }, { sku: 'sku-8' }],
    timestamp: '2020-02-11T12:42:13.123Z',
    ...over,
  };
}

function protoIntact(t: TapTest, label: string): void {
  const probe = {} as Record<string, unknown>;
  t.equal(probe['polluted'], undefined, `${label}: Object.prototype not polluted`);
  t.equal(typeof probe['hasOwnProperty'], 'function', `${label}: hasOwnProperty intact`);
  t.equal(Object.getPrototypeOf(probe), Object.prototype, `${label}: prototype chain intact`);
}

t.test('monasca: a valid record is extracted', async (t) => {
  const c = accept(t, MONASCA, msg(metric()), 'monasca');
  t.equal(c.id.name, 'cpu.idle_perc');
  t.equal(c.id.unit, null, 'monasca has no unit');
  t.same(
    c.id.groupby,
    [
      ['_region', 'RegionOne'],
      ['_tenant_id', 't-1'],
      ['hostname', 'h1'],
      ['service', 'monitoring'],
    ],
    'all dimensions, sorted by name, with _tenant_id and _region from meta',
  );
  t.equal(c.mean, 97.5);
  t.equal(c.tsMin, TS);
  t.equal(c.windowStart, Date.UTC(2020, 1, 11, 12, 42, 0));

  const noMeta = accept(t, MONASCA, msg(without(metric({ dimensions: undefined }), 'meta')), 'no meta, no dims');
  t.same(noMeta.id.groupby, [], 'no dims at all');

  const typed = accept(t, MONASCA, msg(metric({ dimensions: { port: 8080, up: true, ratio: 0.5 }, value: -3 })), 'typed dims');
  t.same(
    typed.id.groupby.filter(([k]) => !k.startsWith('_')),
    [
      ['port', '8080'],
      ['ratio', '0.5'],
      ['up', 'true'],
    ],
    'numbers and booleans become strings',
  );
  t.equal(typed.mean, -3, 'negative value');

  const zero = accept(t, MONASCA, msg(metric({ value: 0, timestamp: 0 })), 'value 0 at the epoch');
  t.equal(zero.mean, 0);
  t.equal(zero.tsMin, 0, 'timestamp 0 is allowed');
  t.equal(zero.windowStart, 0);

  const frac = accept(t, MONASCA, msg(metric({ timestamp: TS + 0.5 })), 'fractional ms');
  t.equal(frac.tsMin, TS + 0.5);

  const odd = { 'a"b': 'x,y', 'ünï': '日本 🎉', '': 'empty name', 'sp ace': '' };
  const oc = accept(t, MONASCA, msg(without(metric({ dimensions: odd }), 'meta')), 'odd characters');
  const expected = Object.entries(odd).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  t.same(oc.id.groupby, expected, 'any characters in dimension names and values round-trip');

  // A "_tenant_id" dimension next to meta.tenantId: the series still has exactly one _tenant_id.
  const dup = accept(t, MONASCA, msg(metric({ dimensions: { _tenant_id: 'spoof', hostname: 'h1' } })), 'dimension named _tenant_id');
  t.equal(dup.id.groupby.filter(([k]) => k === '_tenant_id').length, 1, 'one _tenant_id in the series identity');

  // The last event time whose 60 s window ends by 9999-12-31T23:59:59.999Z (period_end must be storable;
  // later ones are bad_timestamp, see test/unit/limits.test.ts).
  const big = accept(t, MONASCA, msg(metric({ value: 1e6, timestamp: Date.UTC(9999, 11, 31, 23, 58, 59, 999) })), 'last ms of the last storable window');
  t.equal(big.tsMin, Date.UTC(9999, 11, 31, 23, 58, 59, 999));
});

t.test('ceilometer: valid samples and timestamps', async (t) => {
  const c = accept(t, CEILOMETER, msg(ceilo()), 'ceilometer');
  t.equal(c.id.name, 'cpu_util');
  t.equal(c.id.unit, '%');
  t.same(c.id.groupby, [
    ['_tenant_id', 'p-1'],
    ['counter_type', 'gauge'],
    ['project_id', 'p-1'],
    ['resource_id', 'r-1'],
    ['source', 'openstack'],
    ['user_id', 'u-1'],
  ]);
  t.equal(c.mean, 12.5);
  t.equal(c.tsMin, Date.UTC(2020, 1, 11, 12, 42, 13, 123), 'no offset = UTC; microseconds truncated to ms');

  const ts = (s: string, expected: number, label: string): void => {
    const cell = accept(t, CEILOMETER, msg(ceilo({ timestamp: s })), label);
    t.equal(cell.tsMin, expected, `${label}: ${s}`);
  };
  ts('2020-02-11T12:42:13.123999', Date.UTC(2020, 1, 11, 12, 42, 13, 123), 'microseconds truncated, not rounded');
  ts('2020-02-11T12:42:13.999999', Date.UTC(2020, 1, 11, 12, 42, 13, 999), 'truncation does not carry into the second');
  ts('2020-02-11T12:42:13', Date.UTC(2020, 1, 11, 12, 42, 13), 'whole seconds, no offset');
  ts('2020-02-11T12:42:13.5', Date.UTC(2020, 1, 11, 12, 42, 13, 500), 'one fractional digit');
  ts('2020-02-11 12:42:13.123456', Date.UTC(2020, 1, 11, 12, 42, 13, 123), 'space separator');
  ts('2020-02-11T12:42:13Z', Date.UTC(2020, 1, 11, 12, 42, 13), 'Z');
  ts('2020-02-11T12:42:13+02:00', Date.UTC(2020, 1, 11, 10, 42, 13), '+02:00 honoured');
  ts('2020-02-11T12:42:13.123456-05:30', Date.UTC(2020, 1, 11, 18, 12, 13, 123), '-05:30 honoured with microseconds');
  ts('2020-02-11T12:42:13+0100', Date.UTC(2020, 1, 11, 11, 42, 13), '+0100 (no colon) honoured');
  ts('2020-02-11', Date.UTC(2020, 1, 11), 'date only = UTC midnight');
  ts('2020-02-11T12:42', Date.UTC(2020, 1, 11, 12, 42), 'no seconds');
  // The last event time whose 60 s window ends by 9999-12-31T23:59:59.999Z (see test/unit/limits.test.ts).
  ts('9999-12-31T23:58:59.999', Date.UTC(9999, 11, 31, 23, 58, 59, 999), 'last ms of the last storable window');

  const noUnit = accept(t, CEILOMETER, msg(without(ceilo({ counter_unit: undefined, user_id: null }), 'source')), 'no unit, null user');
  t.equal(noUnit.id.unit, null);
  t.same(noUnit.id.groupby, [
    ['_tenant_id', 'p-1'],
    ['counter_type', 'gauge'],
    ['project_id', 'p-1'],
    ['resource_id', 'r-1'],
  ], 'null and absent dimension fields are left out');
  const nullUnit = accept(t, CEILOMETER, msg(ceilo({ counter_unit: null })), 'null unit');
  t.equal(nullUnit.id.unit, null);
});

t.test('ceilometer: CEILOMETER_METADATA keeps resource_metadata keys as dimensions', async (t) => {
  const kept = settings({ format: { kind: 'ceilometer', metadata: [{ name: 'resource_metadata.host', path: ['host'] }, { name: 'resource_metadata.flavor.id', path: ['flavor', 'id'] }, { name: 'resource_metadata.zone', path: ['zone'] }] } });
  const c = accept(t, kept, msg(ceilo()), 'with metadata');
  t.same(c.id.groupby.filter(([k]) => k.startsWith('resource_metadata.')), [
    ['resource_metadata.flavor.id', 'm1'],
    ['resource_metadata.host', 'compute-1'],
  ], 'the named keys, dotted paths included; an absent key adds nothing');
  const odd = accept(t, kept, msg(ceilo({ resource_metadata: { host: { name: 'x' }, flavor: 'm1', zone: 3 } })), 'objects and non-objects on the path');
  t.same(odd.id.groupby.filter(([k]) => k.startsWith('resource_metadata.')), [['resource_metadata.zone', '3']], 'only scalar values are kept; the sample is not refused');
  const none = accept(t, kept, msg(without(ceilo(), 'resource_metadata')), 'no resource_metadata');
  t.notOk(none.id.groupby.some(([k]) => k.startsWith('resource_metadata.')));
});

t.test('json format: mapped fields', async (t) => {
  const c = accept(t, JSON_SETTINGS, msg(xapi()), 'xapi');
  t.equal(c.id.name, 'http://adlnet.gov/expapi/verbs/completed');
  t.equal(c.id.unit, 'points', 'constant unit');
  t.same(c.id.groupby, [
    ['actor', 'mailto:a@example.org'],
    ['first_item', 'sku-7'],
    ['object', 'http://example.org/course/1'],
  ]);
  t.equal(c.mean, 88);
  t.equal(c.tsMin, Date.UTC(2020, 1, 11, 12, 42, 13, 123), 'ISO timestamp');

  const ms = accept(t, JSON_SETTINGS, msg(xapi({ timestamp: TS, items: [] })), 'ms timestamp, empty items');
  t.equal(ms.tsMin, TS, 'ms since the epoch');
  t.same(ms.id.groupby.map(([k]) => k), ['actor', 'object'], 'a missing path is no dimension');

  const counting = settings({
    format: {
      kind: 'json',
      mapping: {
        name: { constant: 'events' },
        value: { constant: 1 },
        timestamp: { path: ['ts'], text: 'ts' },
        unit: null,
        dimensions: [],
      },
    },
  });
  const ev = accept(t, counting, msg({ ts: '2020-02-11T12:42:13' }), 'constants');
  t.equal(ev.id.name, 'events');
  t.equal(ev.id.unit, null);
  t.equal(ev.mean, 1, 'constant value');
  t.equal(ev.tsMin, Date.UTC(2020, 1, 11, 12, 42, 13), 'ISO without offset is UTC in json format too');

  reject(t, JSON_SETTINGS, msg(xapi({ verb: {} })), 'missing_field', 'verb.id', 'json: missing name');
  reject(t, JSON_SETTINGS, msg(xapi({ verb: { id: 7 } })), 'wrong_type', 'verb.id', 'json: numeric name');
  reject(t, JSON_SETTINGS, msg(xapi({ result: { score: { raw: '88' } } })), 'wrong_type', 'result.score.raw', 'json: string value');
  reject(t, JSON_SETTINGS, msg(xapi({ result: null })), 'missing_field', 'result.score.raw', 'json: missing value');
  reject(t, JSON_SETTINGS, msg(xapi({ timestamp: undefined })), 'missing_field', 'timestamp', 'json: missing timestamp');
  reject(t, JSON_SETTINGS, msg(xapi({ timestamp: true })), 'wrong_type', 'timestamp', 'json: boolean timestamp');
  reject(t, JSON_SETTINGS, msg(xapi({ timestamp: 'March 7' })), 'bad_timestamp', 'timestamp', 'json: prose timestamp');
  reject(t, JSON_SETTINGS, msg(xapi({ timestamp: -1 })), 'bad_timestamp', 'timestamp', 'json: negative timestamp');
  reject(t, JSON_SETTINGS, msg(xapi({ object: { id: { nested: 1 } } })), 'wrong_type', 'object.id', 'json: object dimension');
  const tooMany = settings({ format: JSON_FORMAT, maxDimensions: 1 });
  // The mapping has no one field to blame: the detail names the limit instead.
  reject(t, tooMany, msg(xapi()), 'too_many_dimensions', /more than 1 dimensions.*MAX_DIMENSIONS/, 'json: too many dimensions');
  // MAX_DIMENSIONS counts the dimensions a record has, not the ones the mapping could have: with 3 mapped
  // dimensions and MAX_DIMENSIONS=2, a record with only 2 of them present is within the limit.
  const two = settings({ format: JSON_FORMAT, maxDimensions: 2 });
  const r2 = run(two, [msg(xapi({ items: [] }))]);
  t.equal(r2.ok, 1, 'json: 2 present dimensions (3rd mapped path absent) within MAX_DIMENSIONS=2');
});

t.test('a message that is a JSON array is a batch of records', async (t) => {
  const good1 = metric({ value: 1, timestamp: TS });
  const bad = metric({ value: undefined });
  const good2 = metric({ value: 3, timestamp: TS + 1000, dimensions: { hostname: 'h2' } });
  const r = run(MONASCA, [msg(metric({ value: 10 })), msg([good1, bad, 42, good2]), msg([]), msg(metric({ name: '' }))]);
  t.equal(r.records, 1 + 4 + 0 + 1, 'array elements count one each');
  t.equal(r.ok, 3);
  t.equal(r.rejects.length, 3);
  const [r1, r2, r3] = r.rejects;
  t.match(r1, { msg: 1, elem: 1, reason: 'missing_field' }, 'bad element is rejected alone');
  t.ok(r1?.detail.startsWith('[1].metric.value:'), `detail says which element: ${r1?.detail}`);
  t.same(JSON.parse(r1?.raw ?? 'null'), JSON.parse(JSON.stringify(bad)), 'raw is the rejected element re-serialised');
  t.match(r2, { msg: 1, elem: 2, reason: 'not_an_object' });
  t.ok(r2?.detail.startsWith('[2].record:'), `detail: ${r2?.detail}`);
  t.equal(r2?.raw, '42');
  t.match(r3, { msg: 3, elem: -1, reason: 'missing_field' });
  t.equal(r3?.raw, undefined, 'whole messages carry no raw copy');

  const cells = cellsOf(r);
  const h1 = cells.find((c) => c.id.groupby.some(([k, v]) => k === 'hostname' && v === 'h1'));
  const h2 = cells.find((c) => c.id.groupby.some(([k, v]) => k === 'hostname' && v === 'h2'));
  t.equal(cells.length, 2, 'two series, one window');
  t.equal(h1?.count, 2);
  t.equal(h1?.sum, 11);
  t.equal(h1?.mean, 5.5);
  t.equal(h1?.m2, (10 - 5.5) ** 2 + (1 - 5.5) ** 2);
  t.equal(h1?.min, 1);
  t.equal(h1?.max, 10);
  t.equal(h2?.count, 1);
  t.equal(h2?.sum, 3);
  t.equal(r.maxEventMs, TS + 1000);

  const single = run(MONASCA, [msg([metric()])]);
  t.equal(single.ok, 1, 'one-element array');
  const nested = run(MONASCA, [msg([[metric()]])]);
  t.equal(nested.ok, 0, 'arrays are not flattened recursively');
  t.match(nested.rejects, [{ msg: 0, elem: 0, reason: 'not_an_object' }]);
});

t.test('message-level rejections', async (t) => {
  for (const [label, m] of [
    ['truncated', '{"metric":'],
    ['unquoted key', '{metric: 1}'],
    ['single quotes', "{'metric':1}"],
    ['trailing comma', '{"a":1,}'],
    ['NaN literal', '{"metric":{"value":NaN}}'],
    ['two values', '{} {}'],
    ['garbage', 'hello'],
  ] as const) {
    reject(t, MONASCA, m, 'malformed_json', 'message', `malformed: ${label}`);
  }

  for (const [label, bytes] of [
    ['0xff byte', [0x7b, 0xff, 0x7d]],
    ['overlong "/"', [0x22, 0xc0, 0xaf, 0x22]],
    ['lone surrogate', [0x22, 0xed, 0xa0, 0x80, 0x22]],
    ['truncated sequence', [0x22, 0xe2, 0x82, 0x22]],
    ['continuation byte alone', [0x22, 0x80, 0x22]],
  ] as const) {
    reject(t, MONASCA, Uint8Array.from(bytes), 'invalid_utf8', 'message', `invalid UTF-8: ${label}`);
  }
  // Invalid bytes inside an otherwise valid record, in a string value.
  const rec = Buffer.from(msg(metric({ name: 'cpu@' })));
  rec[rec.indexOf('@')] = 0xfe;
  reject(t, MONASCA, rec, 'invalid_utf8', 'message', 'invalid UTF-8 inside a record');
  accept(t, MONASCA, msg(metric({ dimensions: { 'hôst': '日本 🎉' } })), 'valid multi-byte UTF-8');

  reject(t, MONASCA, '', 'empty_message', 'message', 'empty message');

  const LIMIT = 400;
  const small = settings({ maxMessageBytes: LIMIT });
  const base = msg(metric());
  t.ok(Buffer.byteLength(base) < LIMIT, 'fixture fits');
  const exact = base + ' '.repeat(LIMIT - Buffer.byteLength(base));
  accept(t, small, exact, 'exactly MAX_MESSAGE_BYTES');
  const over = exact + ' ';
  const d = reject(t, small, over, 'too_large', 'message', 'one byte over');
  t.match(d, new RegExp(`\\b${LIMIT + 1}\\b`), 'detail gives the size');
  t.match(d, new RegExp(`MAX_MESSAGE_BYTES=${LIMIT}\\b`), 'detail gives the limit');
  // Size is in bytes, not characters: 4-byte emoji (2 UTF-16 units each).
  const wide = msg(metric({ dimensions: { e: '🎉'.repeat(60) } }));
  t.ok(wide.length <= LIMIT && Buffer.byteLength(wide) > LIMIT, `fixture: few chars (${wide.length}), many bytes (${Buffer.byteLength(wide)})`);
  reject(t, small, wide, 'too_large', 'message', 'size counted in bytes');

  for (const [label, m] of [
    ['number', '42'],
    ['null', 'null'],
    ['string', '"cpu"'],
    ['boolean', 'true'],
  ] as const) {
    const det = reject(t, MONASCA, m, 'not_an_object', 'record', `not an object: ${label}`);
    t.ok(det.includes(m), `detail shows the value ${m}: ${det}`);
  }
});

t.test('monasca field rejections', async (t) => {
  const cases: Array<[string, string, RejectReason, string]> = [
    ['no metric', msg(without(metric(), 'metric')), 'missing_field', 'metric'],
    ['metric null', msg(metric({}, { metric: null })), 'missing_field', 'metric'],
    ['metric number', msg(metric({}, { metric: 5 })), 'wrong_type', 'metric'],
    ['metric array', msg(metric({}, { metric: [] })), 'wrong_type', 'metric'],
    ['metric string', msg(metric({}, { metric: '{}' })), 'wrong_type', 'metric'],
    ['no name', msg(metric({ name: undefined })), 'missing_field', 'metric.name'],
    ['name null', msg(metric({ name: null })), 'missing_field', 'metric.name'],
    ['name empty', msg(metric({ name: '' })), 'missing_field', 'metric.name'],
    ['name number', msg(metric({ name: 5 })), 'wrong_type', 'metric.name'],
    ['name object', msg(metric({ name: { a: 1 } })), 'wrong_type', 'metric.name'],
    ['no value', msg(metric({ value: undefined })), 'missing_field', 'metric.value'],
    ['value null', msg(metric({ value: null })), 'missing_field', 'metric.value'],
    ['value string', msg(metric({ value: '12' })), 'wrong_type', 'metric.value'],
    ['value boolean', msg(metric({ value: true })), 'wrong_type', 'metric.value'],
    ['value array', msg(metric({ value: [1] })), 'wrong_type', 'metric.value'],
    ['value 1e999', msg(metric({ value: '@V' }), { '@V': '1e999' }), 'non_finite_value', 'metric.value'],
    ['value -1e999', msg(metric({ value: '@V' }), { '@V': '-1e999' }), 'non_finite_value', 'metric.value'],
    ['value 1e200', msg(metric({ value: 1e200 })), 'non_finite_value', 'metric.value'],
    ['value -1e200', msg(metric({ value: -1e200 })), 'non_finite_value', 'metric.value'],
    ['value 1.7e308', msg(metric({ value: 1.7e308 })), 'non_finite_value', 'metric.value'],
    ['no timestamp', msg(metric({ timestamp: undefined })), 'missing_field', 'metric.timestamp'],
    ['timestamp null', msg(metric({ timestamp: null })), 'missing_field', 'metric.timestamp'],
    ['timestamp string', msg(metric({ timestamp: String(TS) })), 'wrong_type', 'metric.timestamp'],
    ['timestamp object', msg(metric({ timestamp: {} })), 'wrong_type', 'metric.timestamp'],
    ['timestamp -1', msg(metric({ timestamp: -1 })), 'bad_timestamp', 'metric.timestamp'],
    ['timestamp year 10000', msg(metric({ timestamp: Date.UTC(10000, 0, 1) })), 'bad_timestamp', 'metric.timestamp'],
    ['timestamp 1e999', msg(metric({ timestamp: '@T' }), { '@T': '1e999' }), 'bad_timestamp', 'metric.timestamp'],
    ['timestamp 1e20', msg(metric({ timestamp: 1e20 })), 'bad_timestamp', 'metric.timestamp'],
    ['dimensions array', msg(metric({ dimensions: ['a', 'b'] })), 'wrong_type', 'metric.dimensions'],
    ['dimensions string', msg(metric({ dimensions: 'a=b' })), 'wrong_type', 'metric.dimensions'],
    ['dimension value object', msg(metric({ dimensions: { hostname: { a: 1 } } })), 'wrong_type', 'metric.dimensions.hostname'],
    ['dimension value null', msg(metric({ dimensions: { hostname: null } })), 'wrong_type', 'metric.dimensions.hostname'],
    ['dimension value array', msg(metric({ dimensions: { zone: ['a'] } })), 'wrong_type', 'metric.dimensions.zone'],
    ['tenant object', msg(metric({}, { meta: { tenantId: {} } })), 'wrong_type', 'meta.tenantId'],
    ['region array', msg(metric({}, { meta: { region: ['x'] } })), 'wrong_type', 'meta.region'],
  ];
  for (const [label, m, reason, field] of cases) {
    const det = reject(t, MONASCA, m, reason, field, label);
    if (label === 'value 1e200') t.match(det, /range/, 'detail says out of range');
  }
});

t.test('ceilometer field rejections', async (t) => {
  const cases: Array<[string, Record<string, unknown>, RejectReason, string]> = [
    ['no counter_name', ceilo({ counter_name: undefined }), 'missing_field', 'counter_name'],
    ['counter_name number', ceilo({ counter_name: 3 }), 'wrong_type', 'counter_name'],
    ['no counter_volume', ceilo({ counter_volume: undefined }), 'missing_field', 'counter_volume'],
    ['counter_volume string', ceilo({ counter_volume: '1.5' }), 'wrong_type', 'counter_volume'],
    ['counter_volume 1e200', ceilo({ counter_volume: -1e200 }), 'non_finite_value', 'counter_volume'],
    ['counter_unit number', ceilo({ counter_unit: 5 }), 'wrong_type', 'counter_unit'],
    ['no timestamp', ceilo({ timestamp: undefined }), 'missing_field', 'timestamp'],
    ['numeric timestamp', ceilo({ timestamp: TS }), 'wrong_type', 'timestamp'],
    ['prose timestamp', ceilo({ timestamp: 'yesterday' }), 'bad_timestamp', 'timestamp'],
    ['partial date', ceilo({ timestamp: '2020-02' }), 'bad_timestamp', 'timestamp'],
    ['year 10000', ceilo({ timestamp: '10000-01-01T00:00:00' }), 'bad_timestamp', 'timestamp'],
    ['before 1970', ceilo({ timestamp: '1969-12-31T23:59:59Z' }), 'bad_timestamp', 'timestamp'],
    ['before 1970 by offset', ceilo({ timestamp: '1970-01-01T00:30:00+01:00' }), 'bad_timestamp', 'timestamp'],
    ['month 13', ceilo({ timestamp: '2020-13-01T00:00:00' }), 'bad_timestamp', 'timestamp'],
    ['resource_id object', ceilo({ resource_id: { id: 1 } }), 'wrong_type', 'resource_id'],
    ['project_id array', ceilo({ project_id: ['p'] }), 'wrong_type', 'project_id'],
  ];
  for (const [label, rec, reason, field] of cases) reject(t, CEILOMETER, msg(rec), reason, field, `ceilometer ${label}`);
});

t.test('impossible calendar dates are bad timestamps', async (t) => {
  // Date.parse rolls 2020-02-30 over to 2020-03-01; Ceilometer never writes such dates, so one is corrupt data.
  for (const ts of ['2020-02-30T00:00:00', '2021-02-29T12:00:00Z', '2020-04-31']) {
    const r = run(CEILOMETER, [msg(ceilo({ timestamp: ts }))]);
    t.equal(r.rejects[0]?.reason, 'bad_timestamp', `${ts} is rejected as bad_timestamp`);
  }
});

t.test('future timestamps', async (t) => {
  const s = settings({ maxFutureMs: 60_000 });
  accept(t, s, msg(metric({ timestamp: NOW + 60_000 })), 'exactly MAX_FUTURE ahead');
  accept(t, s, msg(metric({ timestamp: NOW - 86_400_000 })), 'a day in the past');
  const d = reject(t, s, msg(metric({ timestamp: NOW + 60_001 })), 'future_timestamp', 'timestamp', '1 ms too far ahead');
  t.match(d, /MAX_FUTURE_SECONDS=60/, 'detail names the limit');
  t.ok(d.includes(new Date(NOW + 60_001).toISOString()), `detail shows the time: ${d}`);
  // The check uses the nowMs argument, not the wall clock.
  accept(t, s, msg(metric({ timestamp: NOW + 60_001 })), 'same record, later now', NOW + 1);
  accept(t, settings({ maxFutureMs: 0 }), msg(metric({ timestamp: NOW + 10 * 365 * 86_400_000 })), 'maxFutureMs 0 = no check');
  const cs = settings({ format: { kind: 'ceilometer' }, maxFutureMs: 1000 });
  reject(t, cs, msg(ceilo({ timestamp: new Date(NOW + 2000).toISOString() })), 'future_timestamp', 'timestamp', 'ceilometer future');

  // A rejected future record does not move maxEventMs.
  const r = run(s, [msg(metric({ timestamp: NOW + 3_600_000 })), msg(metric({ timestamp: NOW - 5 }))]);
  t.equal(r.ok, 1);
  t.equal(r.maxEventMs, NOW - 5, 'maxEventMs counts accepted records only');
});

t.test('too many dimensions', async (t) => {
  const s = settings({ maxDimensions: 3 });
  const dims3 = { a: '1', b: '2', c: '3' };
  accept(t, s, msg(without(metric({ dimensions: dims3 }), 'meta')), 'exactly MAX_DIMENSIONS');
  const d = reject(t, s, msg(metric({ dimensions: { ...dims3, d: '4' } })), 'too_many_dimensions', 'metric.dimensions', 'one over');
  t.match(d, /3/, 'detail gives the limit');
  t.match(d, /MAX_DIMENSIONS/, 'detail names MAX_DIMENSIONS');
  const many: Record<string, string> = {};
  for (let i = 0; i < 10_000; i++) many[`d${i}`] = String(i);
  reject(t, s, msg(metric({ dimensions: many })), 'too_many_dimensions', 'metric.dimensions', '10000 dimensions');
  const none = settings({ maxDimensions: 0 });
  reject(t, none, msg(metric({ dimensions: { a: '1' } })), 'too_many_dimensions', 'metric.dimensions', 'MAX_DIMENSIONS=0');
  accept(t, none, msg(without(metric({ dimensions: {} }), 'meta')), 'MAX_DIMENSIONS=0 with no dimensions');
});

t.test('deeply nested JSON is rejected without crashing', async (t) => {
  const depth = 100_000;
  reject(t, MONASCA, '['.repeat(depth), 'malformed_json', 'message', `${depth} x [`);
  reject(t, MONASCA, '{"a":'.repeat(depth), 'malformed_json', 'message', `${depth} x {"a":`);
  // Balanced deep objects parse; the record then lacks "metric" and is rejected normally.
  reject(t, MONASCA, '{"a":'.repeat(depth) + '1' + '}'.repeat(depth), 'missing_field', 'metric', 'balanced deep object');

  // Balanced deep arrays: V8's JSON.parse accepts them, so the decoder must cope with the parsed value.
  const balanced = '['.repeat(depth) + ']'.repeat(depth);
  const deepDim = msg(metric({ dimensions: { hostname: '@D' } }), { '@D': balanced });
  const deepName = msg(metric({ name: '@D' }), { '@D': balanced });
  for (const [label, m] of [
    ['balanced deep array message', balanced],
    ['balanced deep array as a dimension value', deepDim],
    ['balanced deep array as metric.name', deepName],
  ] as const) {
    let r: DecodeResult | undefined;
    let thrown: unknown;
    try {
      r = run(MONASCA, [m, msg(metric())]);
    } catch (err) {
      thrown = err;
    }
    t.equal(thrown, undefined, `${label}: decodeBatch does not throw (threw ${String(thrown)})`);
    if (r !== undefined) {
      t.equal(r.ok, 1, `${label}: the other message in the batch is still accepted`);
      t.equal(r.rejects.length, 1, `${label}: the deep message is rejected`);
    }
  }
});

t.test('__proto__, constructor, hasOwnProperty are ordinary names', async (t) => {
  const before = Object.getOwnPropertyNames(Object.prototype).sort();
  // JSON text with a literal "__proto__" key (an object literal would set the prototype instead).
  const dimsText = '{"__proto__":"p","constructor":"c","hasOwnProperty":"h","toString":"s","valueOf":"v"}';
  const m = msg(without(metric({ dimensions: '@D' }), 'meta'), { '@D': dimsText });
  const c = accept(t, MONASCA, m, 'magic dimension names');
  t.same(
    c.id.groupby,
    Object.keys(JSON.parse(dimsText) as object).sort().map((k) => [k, (JSON.parse(dimsText) as Record<string, string>)[k]]),
    'all five kept as ordinary dimensions',
  );
  t.equal(c.id.groupby.length, 5, 'five dimensions');
  const obj = groupbyObject(c.id);
  t.equal(Object.getPrototypeOf(obj), null, 'groupby object has no prototype');
  t.ok(Object.prototype.hasOwnProperty.call(obj, '__proto__'), '__proto__ is an own key of the groupby object');
  t.equal(obj['__proto__'], 'p');
  protoIntact(t, 'magic dimension names');

  // GROUP_BY on those names: present -> value, absent -> null (never a prototype member).
  const gb = settings({ groupBy: ['constructor', '__proto__', 'toString'] });
  const withThem = accept(t, gb, m, 'group by magic names');
  t.same(withThem.id.groupby, [
    ['constructor', 'c'],
    ['__proto__', 'p'],
    ['toString', 's'],
  ], 'GROUP_BY order, values from the record');
  const absent = accept(t, gb, msg(metric()), 'group by magic names, absent');
  t.same(absent.id.groupby, [
    ['constructor', null],
    ['__proto__', null],
    ['toString', null],
  ], 'absent = null');

  const pollute = '{"__proto__":{"polluted":1}}';
  const d = reject(
    t,
    MONASCA,
    msg(metric({ dimensions: '@D' }), { '@D': pollute }),
    'wrong_type',
    'metric.dimensions.__proto__',
    '__proto__ object as dimensions',
  );
  t.ok(d.length > 0);
  protoIntact(t, '__proto__ object as dimensions');

  const top = '{"__proto__":{"polluted":1},' + msg(metric()).slice(1);
  accept(t, MONASCA, top, 'top-level __proto__ is ignored');
  protoIntact(t, 'top-level __proto__');

  const inMetric = msg(metric({}, { metric: '@M' }), {
    '@M': `{"__proto__":${JSON.stringify({ name: 'x', value: 1, timestamp: TS, polluted: 1 })}}`,
  });
  reject(t, MONASCA, inMetric, 'missing_field', 'metric.name', 'fields under metric.__proto__ are not read');
  protoIntact(t, 'metric.__proto__');

  const inMeta = msg(metric({}, { meta: '@M' }), { '@M': '{"__proto__":{"tenantId":"evil","polluted":1}}' });
  const nm = accept(t, MONASCA, inMeta, 'meta.__proto__');
  t.notOk(nm.id.groupby.some(([k]) => k === '_tenant_id'), 'tenantId under meta.__proto__ is not read');
  protoIntact(t, 'meta.__proto__');

  const deepPollute = msg(metric({ value_meta: '@V' }), { '@V': '{"a":{"__proto__":{"polluted":1}},"constructor":{"prototype":{"polluted":1}}}' });
  accept(t, MONASCA, deepPollute, 'nested __proto__ in value_meta');
  protoIntact(t, 'nested in value_meta');

  const ceiloProto = `{"__proto__":${msg(ceilo())}}`;
  reject(t, CEILOMETER, ceiloProto, 'missing_field', 'counter_name', 'ceilometer fields under __proto__ are not read');
  protoIntact(t, 'ceilometer __proto__');

  // json format paths never reach Object.prototype: constructor.name would be "Object".
  const protoPath = settings({
    format: {
      kind: 'json',
      mapping: {
        name: { path: ['constructor', 'name'], text: 'constructor.name' },
        value: { constant: 1 },
        timestamp: { path: ['ts'], text: 'ts' },
        unit: null,
        dimensions: [{ name: 'x', path: ['__proto__', 'x'], text: '__proto__.x' }, { name: 'tos', path: ['toString'], text: 'toString' }],
      },
    },
  });
  reject(t, protoPath, msg({ ts: TS }), 'missing_field', 'constructor.name', 'json path constructor.name');
  const own = accept(t, protoPath, `{"ts":${TS},"constructor":{"name":"ctor"},"__proto__":{"x":"px"}}`, 'json own constructor/__proto__');
  t.equal(own.id.name, 'ctor');
  t.same(own.id.groupby, [['x', 'px']], 'own __proto__ key read as data; toString (inherited) absent');
  protoIntact(t, 'json paths');

  t.same(Object.getOwnPropertyNames(Object.prototype).sort(), before, 'Object.prototype has the same keys as before');
});
