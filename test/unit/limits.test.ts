// First line of defence: extraction rejects what the sinks cannot store (NUL and
// unpaired surrogates, names/dimensions/series keys over their byte limits, event times whose window
// ends after 9999), with a reason and a detail naming the field and the limit; and
// meta's _tenant_id and _region count in MAX_DIMENSIONS.
import fc from 'fast-check';
import t from 'tap';
import { parseConfig } from '../../src/config/index.js';
import { Decoder } from '../../src/core/decode.js';
import type { FormatSpec } from '../../src/core/formats/index.js';
import { DECODER_DEFAULTS, REJECT_REASONS, type DecodeResult, type DecoderSettings, type RejectReason } from '../../src/core/messages.js';
import { MAX_TIMESTAMP_MS, eventTimeLimit } from '../../src/core/record.js';
import { identityJsonBytes, identityOverLimit, parseSeriesKey, seriesKey } from '../../src/core/series.js';
import { decoderSettings } from '../../src/pipeline.js';
import { generatePoints } from '../../src/sources/generator.js';
import { Rng, pack, settings } from '../fixtures/gen.js';
import { runPipeline } from '../fixtures/harness.js';

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

const TS = Date.UTC(2020, 1, 11, 12, 42, 13, 123);
const NOW = Date.UTC(2020, 1, 11, 12, 45, 0);
const MONASCA = settings();
const CEILOMETER = settings({ format: { kind: 'ceilometer' } });
const JSON_FORMAT: FormatSpec = {
  kind: 'json',
  mapping: {
    name: { path: ['verb', 'id'], text: 'verb.id' },
    value: { constant: 1 },
    timestamp: { path: ['timestamp'], text: 'timestamp' },
    unit: { path: ['unit'], text: 'unit' },
    dimensions: [{ name: 'actor', path: ['actor', 'mbox'], text: 'actor.mbox' }],
  },
};
const JSON_SETTINGS = settings({ format: JSON_FORMAT });

function run(s: DecoderSettings, messages: ReadonlyArray<string>, nowMs = NOW): DecodeResult {
  const { buffer, offsets } = pack(messages);
  return new Decoder(s).decodeBatch(buffer, offsets, nowMs);
}

function accepted(t: TapTest, s: DecoderSettings, message: string, label: string): void {
  const r = run(s, [message]);
  t.equal(r.ok, 1, `${label}: accepted${r.rejects[0] === undefined ? '' : ` (rejected: ${r.rejects[0].detail})`}`);
}

/** One message rejected with `reason`; the detail starts with `field:` and matches every pattern. */
function rejected(t: TapTest, s: DecoderSettings, message: string, reason: RejectReason, field: string, patterns: RegExp[], label: string): string {
  const r = run(s, [message]);
  t.equal(r.ok, 0, `${label}: not accepted`);
  t.equal(r.series.length, 0, `${label}: no series`);
  const rej = r.rejects[0];
  t.equal(r.rejects.length, 1, `${label}: one reject`);
  if (rej === undefined) return '';
  t.equal(rej.reason, reason, `${label}: reason ${reason} (detail: ${rej.detail})`);
  t.ok(rej.detail.startsWith(`${field}:`), `${label}: detail names ${field}: ${JSON.stringify(rej.detail.slice(0, 200))}`);
  for (const p of patterns) t.match(rej.detail, p, `${label}: detail matches ${String(p)}`);
  t.ok(rej.detail.length < 400, `${label}: detail is short (${rej.detail.length} characters), whatever the input size`);
  return rej.detail;
}

/** JSON text of obj with '@TOKEN' strings replaced by raw JSON (lone surrogates need \u escapes). */
function msg(obj: unknown, raw: Record<string, string> = {}): string {
  let s = JSON.stringify(obj);
  for (const [token, text] of Object.entries(raw)) s = s.replace(JSON.stringify(token), text);
  return s;
}

function monasca(over: Record<string, unknown> = {}, dims: Record<string, unknown> = { hostname: 'h1' }, meta: Record<string, unknown> | null = { tenantId: 't-1', region: 'RegionOne' }): Record<string, unknown> {
  return { metric: { name: 'cpu.idle_perc', dimensions: dims, timestamp: TS, value: 1, ...over }, ...(meta === null ? {} : { meta }) };
}

function ceilo(over: Record<string, unknown> = {}): Record<string, unknown> {
  return { counter_name: 'cpu_util', counter_volume: 1, counter_unit: '%', counter_type: 'gauge', resource_id: 'r-1', project_id: 'p-1', user_id: 'u-1', source: 'openstack', timestamp: '2020-02-11T12:42:13.123456', ...over };
}

function xapi(over: Record<string, unknown> = {}): Record<string, unknown> {
  return { verb: { id: 'completed' }, actor: { mbox: 'mailto:a@example.com' }, unit: 'points', timestamp: TS, ...over };
}

/** Random printable BMP text (mostly 3-byte UTF-8), n code units. */
function randomText(n: number, seed = 1): string {
  const rng = new Rng(seed);
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCharCode(0x4e00 + rng.below(0x5000));
  return s;
}

t.test('reject reasons: the new ones are registered (metrics pre-register REJECT_REASONS)', async (t) => {
  for (const r of ['invalid_text', 'too_long', 'bad_timestamp', 'sink_rejected'] as const) t.ok(REJECT_REASONS.includes(r), `${r} in REJECT_REASONS`);
  t.equal(new Set(REJECT_REASONS).size, REJECT_REASONS.length, 'no duplicates');
});

t.test('NUL in names, units, dimension names and values: invalid_text, in every format', async (t) => {
  const nul = [/U\+0000/, /character index 3\b/];
  rejected(t, MONASCA, msg(monasca({ name: 'cpu\u0000x' })), 'invalid_text', 'metric.name', nul, 'monasca name');
  rejected(t, MONASCA, msg(monasca({}, { 'hos\u0000t': 'h1' })), 'invalid_text', 'metric.dimensions', [/dimension name "hos\\u0000t"/, ...nul], 'monasca dimension name');
  rejected(t, MONASCA, msg(monasca({}, { hostname: 'h1\u0000\u0000x' })), 'invalid_text', 'metric.dimensions.hostname', [/U\+0000/, /character index 2\b/], 'monasca dimension value');
  rejected(t, MONASCA, msg(monasca({}, { hostname: 'h1' }, { tenantId: 'ten\u0000' })), 'invalid_text', 'meta.tenantId', nul, 'monasca meta.tenantId');
  rejected(t, MONASCA, msg(monasca({}, { hostname: 'h1' }, { region: 'reg\u0000' })), 'invalid_text', 'meta.region', nul, 'monasca meta.region');
  rejected(t, CEILOMETER, msg(ceilo({ counter_name: 'cpu\u0000' })), 'invalid_text', 'counter_name', nul, 'ceilometer name');
  rejected(t, CEILOMETER, msg(ceilo({ counter_unit: 'ms \u0000' })), 'invalid_text', 'counter_unit', nul, 'ceilometer unit');
  rejected(t, CEILOMETER, msg(ceilo({ resource_id: 'r-1\u0000' })), 'invalid_text', 'resource_id', nul, 'ceilometer resource_id');
  rejected(t, CEILOMETER, msg(ceilo({ source: 'ope\u0000nstack' })), 'invalid_text', 'source', nul, 'ceilometer source');
  rejected(t, JSON_SETTINGS, msg(xapi({ verb: { id: 'com\u0000pleted' } })), 'invalid_text', 'verb.id', nul, 'json name');
  rejected(t, JSON_SETTINGS, msg(xapi({ unit: 'pts\u0000' })), 'invalid_text', 'unit', nul, 'json unit');
  rejected(t, JSON_SETTINGS, msg(xapi({ actor: { mbox: 'mai\u0000lto' } })), 'invalid_text', 'actor.mbox', nul, 'json dimension value');
  const constUnit = settings({ format: { kind: 'json', mapping: { ...JSON_FORMAT.mapping, unit: { constant: 'p' } } } });
  accepted(t, constUnit, msg(xapi()), 'json constant unit');
  // Other control characters are storable (JSON escapes them): accepted.
  accepted(t, MONASCA, msg(monasca({ name: 'a\u0001b\tc\nd' }, { 'k\u001f': 'v\u0007' })), 'other C0 controls');
});

t.test('unpaired surrogates: invalid_text naming the code point and its index; pairs are fine', async (t) => {
  const high = [/unpaired surrogate U\+D800/, /character index 3\b/];
  const low = [/unpaired surrogate U\+DC00/, /character index 0\b/];
  // JSON text with \u escapes: JSON.parse yields the lone surrogate (UTF-8 bytes cannot carry one).
  rejected(t, MONASCA, msg(monasca({ name: '@N' }), { '@N': '"cpu\\ud800"' }), 'invalid_text', 'metric.name', high, 'monasca name, high at the end');
  rejected(t, MONASCA, msg(monasca({}, { hostname: '@V' }), { '@V': '"\\udc00h1"' }), 'invalid_text', 'metric.dimensions.hostname', low, 'monasca value, low first');
  rejected(t, MONASCA, msg(monasca({}, { '@K': 'x' }), { '@K': '"abc\\ud800x"' }), 'invalid_text', 'metric.dimensions', [/dimension name/, ...high], 'monasca dimension name');
  rejected(t, MONASCA, msg(monasca({}, { hostname: 'h1' }, { tenantId: '@T' }), { '@T': '"ten\\ud800"' }), 'invalid_text', 'meta.tenantId', high, 'monasca meta.tenantId');
  rejected(t, CEILOMETER, msg(ceilo({ counter_name: '@N' }), { '@N': '"cpu\\ud800"' }), 'invalid_text', 'counter_name', high, 'ceilometer name');
  rejected(t, CEILOMETER, msg(ceilo({ counter_unit: '@U' }), { '@U': '"\\udc00"' }), 'invalid_text', 'counter_unit', low, 'ceilometer unit');
  rejected(t, CEILOMETER, msg(ceilo({ user_id: '@U' }), { '@U': '"u-1\\ud800"' }), 'invalid_text', 'user_id', high, 'ceilometer user_id');
  rejected(t, JSON_SETTINGS, msg(xapi({ verb: { id: '@N' } }), { '@N': '"com\\ud800"' }), 'invalid_text', 'verb.id', high, 'json name');
  rejected(t, JSON_SETTINGS, msg(xapi({ unit: '@U' }), { '@U': '"\\udc00pts"' }), 'invalid_text', 'unit', low, 'json unit');
  rejected(t, JSON_SETTINGS, msg(xapi({ actor: { mbox: '@V' } }), { '@V': '"mai\\ud800"' }), 'invalid_text', 'actor.mbox', high, 'json dimension value');
  // Two reversed halves are two unpaired surrogates; the first is reported.
  rejected(t, MONASCA, msg(monasca({ name: '@N' }), { '@N': '"ab\\ude00\\ud83d"' }), 'invalid_text', 'metric.name', [/U\+DE00/, /character index 2\b/], 'reversed pair');
  // Stored as U+FFFD these would collide; a proper pair (escaped or literal) is accepted and kept.
  accepted(t, MONASCA, msg(monasca({ name: '@N' }, { hostname: '@V' }), { '@N': '"cpu\\ud83d\\ude00"', '@V': '"h\\ud83d\\ude00"' }), 'escaped surrogate pair');
  accepted(t, MONASCA, msg(monasca({ name: 'cpu 😀' }, { 'höst 日本': 'wert 🎉' })), 'literal non-BMP text');
  // NUL before an unpaired surrogate: the first problem is reported.
  rejected(t, MONASCA, msg(monasca({ name: '@N' }), { '@N': '"a\\u0000\\ud800"' }), 'invalid_text', 'metric.name', [/U\+0000/, /index 1\b/], 'NUL first');
});

t.test('text checks: a record is invalid_text exactly when a stored string has NUL or an unpaired surrogate', async (t) => {
  // JSON text yields those only from \u escapes, so the decoder checks text only in messages with "\u":
  // whatever way the string is written (JSON.stringify escapes NUL and unpaired surrogates, Python's
  // ensure_ascii escapes everything beyond ASCII), the verdict is the same.
  const unit = fc.oneof(fc.constantFrom('a', 'é', '日', '😀', '\u0000', '\ud800', '\udc00', '\ud83d', '\ude00', '\\', '"', 'u', '\n'), fc.string({ unit: 'binary', maxLength: 1 }));
  const str = fc.array(unit, { minLength: 1, maxLength: 8 }).map((a) => a.join(''));
  const asciiJson = (s: string): string => JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  const decoder = new Decoder(MONASCA);
  const r = fc.check(fc.property(str.filter((x) => x.length > 0), str, fc.boolean(), (name, value, ascii) => {
    const enc = ascii ? asciiJson : JSON.stringify;
    const m = `{"metric":{"name":${enc(name)},"dimensions":{"h":${enc(value)}},"timestamp":${TS},"value":1}}`;
    const { buffer, offsets } = pack([m]);
    const out = decoder.decodeBatch(buffer, offsets, NOW);
    const bad = (x: string): boolean => x.includes('\u0000') || !x.isWellFormed();
    return bad(name) || bad(value) ? out.rejects[0]?.reason === 'invalid_text' : out.ok === 1;
  }), { numRuns: 5000, seed: 20260101 });
  t.notOk(r.failed, `5000 generated names and values (counterexample: ${JSON.stringify(r.counterexample)})`);
  // Decoder.extract on a value without its message bytes checks text by default.
  let reason: unknown;
  try {
    decoder.extract({ metric: { name: 'a\u0000', timestamp: TS, value: 1 } }, NOW);
  } catch (err) {
    reason = (err as { reason?: unknown }).reason;
  }
  t.equal(reason, 'invalid_text', 'extract() checks text by default');
});

t.test('byte limits: too_long with field, bytes, limit and option; just under is accepted', async (t) => {
  const NAME = [/10240 bytes/, /MAX_NAME_BYTES=1024\b/];
  const big = 'n'.repeat(10_240);
  rejected(t, MONASCA, msg(monasca({ name: big })), 'too_long', 'metric.name', NAME, 'monasca 10 KB name');
  rejected(t, CEILOMETER, msg(ceilo({ counter_name: big })), 'too_long', 'counter_name', NAME, 'ceilometer 10 KB name');
  rejected(t, JSON_SETTINGS, msg(xapi({ verb: { id: big } })), 'too_long', 'verb.id', NAME, 'json 10 KB name');
  rejected(t, CEILOMETER, msg(ceilo({ counter_unit: big })), 'too_long', 'counter_unit', NAME, 'ceilometer 10 KB unit');
  rejected(t, JSON_SETTINGS, msg(xapi({ unit: big })), 'too_long', 'unit', NAME, 'json 10 KB unit');

  // ~3,000 random characters: over PostgreSQL's 2,704-byte btree entry, and over MAX_DIMENSION_BYTES.
  const random = randomText(3000);
  const DIM = [new RegExp(`${Buffer.byteLength(random)} bytes`), /MAX_DIMENSION_BYTES=1024\b/];
  rejected(t, MONASCA, msg(monasca({}, { hostname: random })), 'too_long', 'metric.dimensions.hostname', DIM, 'monasca 3000-character value');
  rejected(t, MONASCA, msg(monasca({}, { hostname: 'h1' }, { tenantId: random })), 'too_long', 'meta.tenantId', DIM, 'monasca meta.tenantId');
  rejected(t, CEILOMETER, msg(ceilo({ resource_id: random })), 'too_long', 'resource_id', DIM, 'ceilometer resource_id');
  rejected(t, JSON_SETTINGS, msg(xapi({ actor: { mbox: random } })), 'too_long', 'actor.mbox', DIM, 'json dimension value');
  rejected(t, MONASCA, msg(monasca({}, { [random]: 'v' })), 'too_long', 'metric.dimensions', [/dimension name "/, ...DIM], 'monasca dimension name');
  // A 600 KB value (over Kafka's 1 MiB with a few of them in a row) in a message under MAX_MESSAGE_BYTES.
  const huge = 'v'.repeat(600 * 1024);
  rejected(t, MONASCA, msg(monasca({}, { hostname: huge })), 'too_long', 'metric.dimensions.hostname', [/614400 bytes/, /MAX_DIMENSION_BYTES=1024\b/], 'monasca 600 KB value');
  rejected(t, CEILOMETER, msg(ceilo({ project_id: huge })), 'too_long', 'project_id', [/614400 bytes/], 'ceilometer 600 KB value');

  // Bytes, not characters: 1024 bytes pass, 1025 do not, in 1-, 2-, 3- and 4-byte characters.
  for (const [label, unit, perChar] of [['ascii', 'a', 1], ['é', 'é', 2], ['日', '日', 3], ['😀', '😀', 4]] as const) {
    const fit = unit.repeat(Math.floor(1024 / perChar));
    const pad = 'a'.repeat(1024 - Buffer.byteLength(fit));
    accepted(t, MONASCA, msg(monasca({ name: fit + pad })), `name of 1024 bytes (${label})`);
    accepted(t, MONASCA, msg(monasca({}, { [fit + pad]: 'v' }, null)), `dimension name of 1024 bytes (${label})`);
    accepted(t, MONASCA, msg(monasca({}, { k: fit + pad }, null)), `dimension value of 1024 bytes (${label})`);
    accepted(t, CEILOMETER, msg(ceilo({ counter_unit: fit + pad })), `unit of 1024 bytes (${label})`);
    const over = fit + pad + 'a';
    rejected(t, MONASCA, msg(monasca({ name: over })), 'too_long', 'metric.name', [/1025 bytes/, /MAX_NAME_BYTES=1024/], `name of 1025 bytes (${label})`);
    rejected(t, MONASCA, msg(monasca({}, { h: over })), 'too_long', 'metric.dimensions.h', [/1025 bytes/, /MAX_DIMENSION_BYTES=1024/], `value of 1025 bytes (${label})`);
  }
  // 255 characters of any script (Monasca's API limit) fit each field's default; the identity as a
  // whole is bounded by MAX_SERIES_KEY_BYTES (below).
  accepted(t, MONASCA, msg(monasca({ name: '😀'.repeat(255) })), '255 four-byte characters in the name');
  accepted(t, MONASCA, msg(monasca({}, { ['😀'.repeat(255)]: 'v' })), '255 four-byte characters in a dimension name');
  accepted(t, MONASCA, msg(monasca({}, { h: '😀'.repeat(255) })), '255 four-byte characters in a dimension value');
  const a255 = 'a'.repeat(255);
  accepted(t, MONASCA, msg(monasca({ name: a255 }, { [`${a255.slice(1)}1`]: a255, [`${a255.slice(1)}2`]: a255, [`${a255.slice(1)}3`]: a255 })), '255-character name and 3 dimensions of 255/255 + meta');
  rejected(t, MONASCA, msg(monasca({ name: '日'.repeat(255) }, { ['日'.repeat(255)]: '日'.repeat(255) }, null)), 'too_long', 'series key', [/MAX_SERIES_KEY_BYTES=2048/], '255 three-byte characters in name, dimension name and value: 2.3 KB identity');

  // The limits come from the settings: numbers and booleans as dimension values are checked too.
  const small = settings({ maxNameBytes: 4, maxDimensionBytes: 4 });
  accepted(t, small, msg(monasca({ name: 'abcd' }, { abcd: 1234, b: true }, null)), 'exactly at small limits');
  rejected(t, small, msg(monasca({ name: 'abcde' }, {}, null)), 'too_long', 'metric.name', [/5 bytes/, /MAX_NAME_BYTES=4\b/], 'small name limit');
  rejected(t, small, msg(monasca({ name: 'abcd' }, { a: 12345 }, null)), 'too_long', 'metric.dimensions.a', [/5 bytes/, /MAX_DIMENSION_BYTES=4\b/], 'number value over a small limit');
  rejected(t, small, msg(monasca({ name: 'abcd' }, { a: false }, null)), 'too_long', 'metric.dimensions.a', [/5 bytes/], 'boolean value over a small limit');
  rejected(t, small, msg(monasca({ name: 'abcd' }, { a: 'x' }, { tenantId: 'tenant' })), 'too_long', 'meta.tenantId', [/6 bytes/, /MAX_DIMENSION_BYTES=4\b/], 'meta value over a small limit');
});

t.test('series key: bytes of the identity as JSON, limited by MAX_SERIES_KEY_BYTES', async (t) => {
  // identityJsonBytes is exactly the JSON the sinks store, escapes and all.
  const cases: Array<[string, string | null, Array<[string, string]>, string[] | null]> = [
    ['cpu', null, [], null],
    ['cpu', '%', [['hostname', 'h1'], ['a', 'b']], null],
    ['"quoted\\"', 'µs', [['k\u0001', 'v\n\t\r\b\f'], ['日本', '😀🎉']], null],
    ['c:1-', '-', [['1:', '-'], ['', '']], null],
    ['cpu', null, [['hostname', 'h1']], ['zone', 'hostname', 'absent']],
    ['x'.repeat(500), 'y'.repeat(300), [['\u001f'.repeat(100), '"'.repeat(50)]], null],
  ];
  for (const [name, unit, dims, groupBy] of cases) {
    const key = seriesKey(name, unit, dims, groupBy);
    const id = parseSeriesKey(key);
    const json = JSON.stringify([id.name, id.unit, id.groupby]);
    t.equal(identityJsonBytes(key), Buffer.byteLength(json), `identityJsonBytes = UTF-8 bytes of ${json.slice(0, 60)}`);
    const bytes = Buffer.byteLength(json);
    t.equal(identityOverLimit(key, bytes), -1, `at the limit (${bytes}): not over`);
    t.equal(identityOverLimit(key, bytes - 1), bytes, `one byte under it: over, by the exact count`);
  }

  // Three dimensions of 1000 bytes each pass MAX_DIMENSION_BYTES but not the 2048-byte identity.
  const v = 'v'.repeat(1000);
  const three = msg(monasca({}, { a: v, b: v, c: v }, null));
  const d = rejected(t, MONASCA, three, 'too_long', 'series key', [/MAX_SERIES_KEY_BYTES=2048\b/, /as JSON/], 'three 1000-byte values');
  t.match(d, new RegExp(`\\b${Buffer.byteLength(JSON.stringify(['cpu.idle_perc', null, [['a', v], ['b', v], ['c', v]]]))} bytes`), 'detail gives the exact byte count');
  // Exactly at the limit is accepted, one byte more is not (dimension b fills the identity up).
  const bare = Buffer.byteLength(JSON.stringify(['cpu.idle_perc', null, [['a', v], ['b', '']]]));
  accepted(t, MONASCA, msg(monasca({}, { a: v, b: 'w'.repeat(2048 - bare) }, null)), 'identity of exactly 2048 bytes');
  rejected(t, MONASCA, msg(monasca({}, { a: v, b: 'w'.repeat(2049 - bare) }, null)), 'too_long', 'series key', [/2049 bytes/], 'identity of 2049 bytes');
  // JSON escapes count: 400 control characters are 400 bytes of UTF-8 but 2400 bytes stored.
  rejected(t, MONASCA, msg(monasca({}, { a: '\u0001'.repeat(400) }, null)), 'too_long', 'series key', [/MAX_SERIES_KEY_BYTES=2048/], 'escaped control characters');
  // Only the group-by dimensions are in the identity.
  const byHost = settings({ groupBy: ['hostname'] });
  accepted(t, byHost, msg(monasca({}, { hostname: 'h1', a: v, b: v, c: v }, null)), 'long dimensions outside GROUP_BY');
  // Unit counts (ceilometer), and the limit comes from the settings.
  const tight = settings({ format: { kind: 'ceilometer' }, maxSeriesKeyBytes: 200 });
  const base = ceilo();
  // The identity's dimensions: the sample's, and _tenant_id (its project_id again).
  const dims: Array<[string, unknown]> = [['_tenant_id', base['project_id']], ...['counter_type', 'project_id', 'resource_id', 'source', 'user_id'].map((k): [string, unknown] => [k, base[k]])];
  const idBytes = Buffer.byteLength(JSON.stringify([base['counter_name'], base['counter_unit'], dims]));
  const unitFit = '%'.repeat(1 + 200 - idBytes);
  accepted(t, tight, msg(ceilo({ counter_unit: unitFit })), 'ceilometer identity at a 200-byte limit');
  rejected(t, tight, msg(ceilo({ counter_unit: `${unitFit}%` })), 'too_long', 'series key', [/201 bytes/, /MAX_SERIES_KEY_BYTES=200\b/], 'ceilometer identity one over');
  // The json format too.
  const jsonTight = settings({ format: JSON_FORMAT, maxSeriesKeyBytes: 64 });
  rejected(t, jsonTight, msg(xapi({ actor: { mbox: 'm'.repeat(40) } })), 'too_long', 'series key', [/MAX_SERIES_KEY_BYTES=64\b/], 'json identity over');

  // In a JSON array only the element is rejected, and the stream goes on.
  const r = run(MONASCA, [`[${three},${msg(monasca())}]`, msg(monasca({ name: 'other' }))]);
  t.equal(r.ok, 2, 'the other element and message are accepted');
  t.match(r.rejects, [{ msg: 0, elem: 0, reason: 'too_long' }]);
  t.ok(r.rejects[0]?.detail.startsWith('[0].series key:'), 'element index in the detail');
});

t.test('event times: the window must end by 9999-12-31T23:59:59.999Z (bad_timestamp), with MAX_FUTURE_SECONDS=0', async (t) => {
  t.equal(eventTimeLimit(60_000), Date.UTC(9999, 11, 31, 23, 59), 'WINDOW_SECONDS=60: event times before 9999-12-31T23:59:00Z');
  t.equal(eventTimeLimit(3_600_000), Date.UTC(9999, 11, 31, 23), 'WINDOW_SECONDS=3600: before 23:00');
  t.equal(eventTimeLimit(1000), MAX_TIMESTAMP_MS - 999, 'WINDOW_SECONDS=1: before 23:59:59');
  for (const w of [1000, 7000, 60_000, 3_600_000, 86_400_000]) {
    const limit = eventTimeLimit(w);
    const lastStart = Math.floor((limit - 1) / w) * w;
    t.ok(lastStart + w <= MAX_TIMESTAMP_MS && limit + w > MAX_TIMESTAMP_MS, `window ${w / 1000} s: the last accepted window ends by MAX_TIMESTAMP_MS, the next would not`);
  }

  const hourly = settings({ windowMs: 3_600_000, maxFutureMs: 0 });
  const lateIn9999 = Date.UTC(9999, 11, 31, 23, 30);
  const d = rejected(t, hourly, msg(monasca({ timestamp: lateIn9999 })), 'bad_timestamp', 'metric.timestamp', [
    /9999-12-31T23:30:00\.000Z/, /WINDOW_SECONDS=3600\b/, /9999-12-31T23:59:59\.999Z/, /before 9999-12-31T23:00:00\.000Z are allowed/,
  ], 'monasca: an hour window ending in 10000');
  t.match(d, /window from 9999-12-31T23:00:00\.000Z/, 'detail gives the window');
  accepted(t, hourly, msg(monasca({ timestamp: Date.UTC(9999, 11, 31, 22, 59, 59, 999) })), 'monasca: last ms of the last storable hour window');
  accepted(t, hourly, msg(monasca({ timestamp: Date.UTC(9999, 11, 31, 22, 59, 59, 999) + 0.5 })), 'fractional ms under the limit');
  rejected(t, hourly, msg(monasca({ timestamp: MAX_TIMESTAMP_MS })), 'bad_timestamp', 'metric.timestamp', [/WINDOW_SECONDS=3600/], 'monasca: last ms of 9999');
  rejected(t, hourly, msg(monasca({ timestamp: MAX_TIMESTAMP_MS + 1 })), 'bad_timestamp', 'metric.timestamp', [/outside 1970-01-01\.\.9999-12-31/], 'monasca: year 10000 (the range check)');
  const ceiloHourly = settings({ format: { kind: 'ceilometer' }, windowMs: 3_600_000, maxFutureMs: 0 });
  rejected(t, ceiloHourly, msg(ceilo({ timestamp: '9999-12-31T23:00:00' })), 'bad_timestamp', 'timestamp', [/WINDOW_SECONDS=3600/], 'ceilometer');
  accepted(t, ceiloHourly, msg(ceilo({ timestamp: '9999-12-31T22:59:59.999999' })), 'ceilometer: last storable ms');
  const jsonHourly = settings({ format: JSON_FORMAT, windowMs: 3_600_000, maxFutureMs: 0 });
  rejected(t, jsonHourly, msg(xapi({ timestamp: '9999-12-31T23:59:59.999Z' })), 'bad_timestamp', 'timestamp', [/WINDOW_SECONDS=3600/], 'json (ISO)');
  rejected(t, jsonHourly, msg(xapi({ timestamp: Date.UTC(9999, 11, 31, 23) })), 'bad_timestamp', 'timestamp', [/WINDOW_SECONDS=3600/], 'json (ms)');
  // A window length that does not divide the epoch-to-10000 span: the last whole window before it.
  const odd = settings({ windowMs: 7000, maxFutureMs: 0 });
  const limit7 = eventTimeLimit(7000);
  accepted(t, odd, msg(monasca({ timestamp: limit7 - 1 })), '7 s windows: last accepted ms');
  rejected(t, odd, msg(monasca({ timestamp: limit7 })), 'bad_timestamp', 'metric.timestamp', [/WINDOW_SECONDS=7\b/], '7 s windows: first rejected ms');
  // With MAX_FUTURE_SECONDS on, the future check still applies to storable times.
  rejected(t, settings({ windowMs: 3_600_000, maxFutureMs: 1000 }), msg(monasca({ timestamp: Date.UTC(9000, 0, 1) })), 'future_timestamp', 'timestamp', [/MAX_FUTURE_SECONDS=1/], 'future check unchanged');
});

t.test('MAX_DIMENSIONS counts meta tenant and region', async (t) => {
  const three = settings({ maxDimensions: 3 });
  accepted(t, three, msg(monasca({}, { a: '1' })), '1 dimension + tenant + region = 3');
  rejected(t, three, msg(monasca({}, { a: '1', b: '2' })), 'too_many_dimensions', 'meta.region', [/adding _region makes more than 3 dimensions/, /MAX_DIMENSIONS/], '2 + tenant + region = 4');
  rejected(t, three, msg(monasca({}, { a: '1', b: '2', c: '3' })), 'too_many_dimensions', 'meta.tenantId', [/adding _tenant_id makes more than 3/, /MAX_DIMENSIONS/], '3 + tenant');
  accepted(t, three, msg(monasca({}, { a: '1', b: '2' }, { tenantId: 't' })), '2 + tenant only = 3');
  // A same-named dimension is replaced by meta, not added.
  accepted(t, three, msg(monasca({}, { _tenant_id: 'spoof', _region: 'spoof', a: '1' })), 'meta replaces same-named dimensions');
  rejected(t, three, msg(monasca({}, { _tenant_id: 'spoof', a: '1', b: '2' })), 'too_many_dimensions', 'meta.region', [/MAX_DIMENSIONS/], 'replaced tenant, added region');
  const none = settings({ maxDimensions: 0 });
  rejected(t, none, msg(monasca({}, {}, { tenantId: 't' })), 'too_many_dimensions', 'meta.tenantId', [/more than 0/], 'MAX_DIMENSIONS=0 with meta');
  // The series never has more dimensions than MAX_DIMENSIONS.
  const r = run(three, [msg(monasca({}, { a: '1' }))]);
  t.equal(parseSeriesKey(r.series[0] ?? '').groupby.length, 3, 'accepted series has 3 dimensions');
});

t.test('the default workloads pass the default limits unchanged', async (t) => {
  const decoder = new Decoder(decoderSettings(parseConfig({ MAX_FUTURE_SECONDS: '0' })));
  const msgs: string[] = [];
  for (const p of generatePoints({ count: 20_000, metrics: 1000, hosts: 4, intervalMs: 30_000, startMs: Date.UTC(2020, 1, 11, 12, 42, 13), seed: 1 })) msgs.push(p.json);
  const { buffer, offsets } = pack(msgs);
  const r = decoder.decodeBatch(buffer, offsets, Date.now());
  t.equal(r.ok, 20_000, 'seed 000: every point accepted');
  t.same(r.rejects.slice(0, 3), [], 'no rejects');
});

t.test('configuration -> decoder settings: defaults and the options reach the decoder', async (t) => {
  const s = decoderSettings(parseConfig({}));
  t.equal(s.maxNameBytes, DECODER_DEFAULTS.maxNameBytes);
  t.equal(s.maxDimensionBytes, DECODER_DEFAULTS.maxDimensionBytes);
  t.equal(s.maxSeriesKeyBytes, DECODER_DEFAULTS.maxSeriesKeyBytes);
  const set = decoderSettings(parseConfig({ MAX_NAME_BYTES: '5', MAX_DIMENSION_BYTES: '6', MAX_SERIES_KEY_BYTES: '700' }));
  t.same([set.maxNameBytes, set.maxDimensionBytes, set.maxSeriesKeyBytes], [5, 6, 700]);
  rejected(t, set, msg(monasca({ name: 'sixsix' }, {}, null)), 'too_long', 'metric.name', [/6 bytes/, /MAX_NAME_BYTES=5\b/], 'MAX_NAME_BYTES=5');
  // Settings built in code are checked once, at construction.
  for (const [field, value] of [['maxNameBytes', 0], ['maxDimensionBytes', 1.5], ['maxSeriesKeyBytes', -1], ['windowMs', 0], ['maxDimensions', -1]] as const) {
    t.throws(() => new Decoder(settings({ [field]: value })), new RangeError(`${field} (${value}) must be an integer >= ${field === 'maxDimensions' ? 0 : 1}`), `${field}=${value} is a RangeError`);
  }
});

t.test('end to end: rejected records reach the dead letters with reason and detail, the stream goes on', async (t) => {
  const good = (name: string) => msg({ metric: { name, dimensions: { host: 'h' }, timestamp: 1_700_000_000_000, value: 1 } });
  const lines = [
    good('good1'),
    msg({ metric: { name: 'nul\u0000name', dimensions: {}, timestamp: 1_700_000_000_000, value: 1 } }),
    '{"metric":{"name":"x","dimensions":{"host":"\\ud800"},"timestamp":1700000000000,"value":1}}',
    msg({ metric: { name: 'x', dimensions: { host: 'v'.repeat(2000) }, timestamp: 1_700_000_000_000, value: 1 } }),
    msg({ metric: { name: 'x', dimensions: { a: 'v'.repeat(1000), b: 'v'.repeat(1000), c: 'v'.repeat(1000) }, timestamp: 1_700_000_000_000, value: 1 } }),
    msg({ metric: { name: 'x', dimensions: {}, timestamp: Date.UTC(9999, 11, 31, 23, 59, 30), value: 1 } }),
    good('good2'),
  ];
  const run = await runPipeline(t, { SOURCE: 'file:$DIR/in.ndjson', WORKER_THREADS: '1', MAX_FUTURE_SECONDS: '0' }, { files: { 'in.ndjson': lines.join('\n') } });
  t.same(run.rows.map((r) => r.name).sort(), ['good1', 'good2'], 'the good records give rows');
  t.same(run.deadLetters.map((d) => d.reason), ['invalid_text', 'invalid_text', 'too_long', 'too_long', 'bad_timestamp'], 'each rejected record dead-lettered with its reason, in order');
  t.match(run.deadLetters[0]?.detail, /^metric\.name: contains U\+0000/);
  t.match(run.deadLetters[1]?.detail, /^metric\.dimensions\.host: contains an unpaired surrogate U\+D800/);
  t.match(run.deadLetters[2]?.detail, /^metric\.dimensions\.host: 2000 bytes \(UTF-8\), more than MAX_DIMENSION_BYTES=1024$/);
  t.match(run.deadLetters[3]?.detail, /^series key: \d+ bytes as JSON .*MAX_SERIES_KEY_BYTES=2048$/);
  t.match(run.deadLetters[4]?.detail, /^metric\.timestamp: 9999-12-31T23:59:30\.000Z .*WINDOW_SECONDS=60/);
  const metrics = await run.registry.getSingleMetricAsString('streamstats_records_total');
  t.match(metrics, /streamstats_records_total\{result="invalid_text"\} 2/);
  t.match(metrics, /streamstats_records_total\{result="too_long"\} 2/);
});
