// The PostgreSQL sink's COPY encoder is pure: it loads no module at run time (so nothing of the main
// thread's comes with it), and a worker thread builds the same bytes from the same rows as the main
// thread. The binary layout is read back field by field (the real server reads it in
// test/integration/postgres-sink.test.ts).
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import t from 'tap';
import { encodeCopy, isoMs, type EncodeRow } from '../../src/sinks/postgres/encode.js';
import { Rng } from '../fixtures/gen.js';
import type { StatsRow } from '../../src/windows/row.js';

const ENCODE_URL = new URL('../../src/sinks/postgres/encode.js', import.meta.url);

function rows(): EncodeRow[] {
  return Array.from({ length: 50 }, (_, i) => {
    const ps = Date.UTC(2020, 1, 11, 12, 42) + (i % 3) * 60_000;
    const row: StatsRow = {
      name: `m${i}`, unit: i % 2 === 0 ? 'ms' : null, groupby: { h: `h\t${i}` }, count: 2 ** 40 + i, sum: i * 1.5, min: -i, max: i, avg: 0, stddev: 0.5,
      duration_start: new Date(ps + 1000).toISOString(), duration_end: new Date(ps + 2000).toISOString(), duration: 1, period: 60,
      period_start: new Date(ps).toISOString(), period_end: new Date(ps + 60_000).toISOString(), topic: `t\\${i % 2}`, partition: i % 4,
      ...(i % 5 === 0 ? { sketch: { a: 0.01, pos: { '3': 1, '-7': 2 }, neg: { '1': 1 }, zero: 0, count: 4 } } : {}),
    };
    return { row, series: { id: (i + 1).toString(16).padStart(32, '0') } };
  });
}

t.test('the encoder module imports nothing at run time', async (t) => {
  const js = readFileSync(ENCODE_URL, 'utf8');
  t.notMatch(js, /^\s*import\s|\bimport\(|\brequire\(/m, 'no import, dynamic import or require in dist/src/sinks/postgres/encode.js');
});

t.test('a worker thread encodes the same rows to the same bytes, binary and text', async (t) => {
  const input = rows();
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.url).then((m) => {
      parentPort.postMessage({ binary: m.encodeCopy(workerData.rows, 'binary'), text: m.encodeCopy(workerData.rows, 'text') });
    });`;
  const got = await new Promise<{ binary: Uint8Array; text: Uint8Array }>((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData: { url: ENCODE_URL.href, rows: input } });
    w.once('message', (m: { binary: Uint8Array; text: Uint8Array }) => {
      resolve(m);
      void w.terminate();
    });
    w.once('error', reject);
  });
  t.same(Buffer.from(got.binary), encodeCopy(input, 'binary'), 'binary COPY data identical');
  t.same(Buffer.from(got.text), encodeCopy(input, 'text'), 'text COPY data identical');
});

t.test('binary layout: signature, 15 fields a row, uuid, timestamps in us since 2000, int8 past 2^32, trailer', async (t) => {
  const [r] = rows();
  const b = encodeCopy([r!], 'binary');
  t.equal(b.subarray(0, 11).toString('latin1'), 'PGCOPY\n\xff\r\n\0', 'signature');
  let at = 19;
  t.equal(b.readInt16BE(at), 15, 'field count');
  at += 2;
  const field = (): Buffer => {
    const n = b.readInt32BE(at);
    const v = n < 0 ? Buffer.alloc(0) : b.subarray(at + 4, at + 4 + n);
    at += 4 + Math.max(n, 0);
    return v;
  };
  t.equal(field().toString('hex'), r!.series.id, 'series uuid');
  t.equal(field().readBigInt64BE(), BigInt(Date.parse(r!.row.period_start) - Date.UTC(2000, 0, 1)) * 1000n, 'period_start');
  field();
  field();
  t.equal(field().readBigInt64BE(), BigInt(r!.row.count), 'count as int8');
  for (let i = 0; i < 9; i++) field();
  const bin = field();
  t.equal(bin.length, 36, 'sketch_bin: three buckets of 12 bytes');
  t.equal(b.readInt16BE(at), -1, 'trailer');
  t.equal(at + 2, b.length, 'nothing after it');
});

t.test('isoMs reads what Date.parse reads: random instants, calendar edges, other forms', async (t) => {
  const rng = new Rng(23);
  const cases: string[] = [];
  for (let i = 0; i < 20_000; i++) cases.push(new Date(rng.int(-62_000_000_000_000, 253_402_300_799_999)).toISOString());
  cases.push(
    '0000-01-01T00:00:00.000Z', '0099-12-31T23:59:59.999Z', '0100-01-01T00:00:00.000Z', '2020-02-29T12:00:00.000Z', '2021-02-29T12:00:00.000Z',
    '2020-04-31T00:00:00.000Z', '2020-13-01T00:00:00.000Z', '2020-00-10T00:00:00.000Z', '2020-01-01T24:00:00.000Z', '2020-01-01T23:60:00.000Z',
    '2020-01-01T23:59:60.000Z', '2020-01-0xT00:00:00.000Z', '2020-01-01T00:00:00.000+', '2020-01-01T00:00:00Z', '2020-01-01', '+010000-01-01T00:00:00.000Z',
    '9999-12-31T23:59:59.999Z', '', 'yesterday',
  );
  const wrong = cases.filter((c) => !Object.is(isoMs(c), Date.parse(c)));
  t.same(wrong.slice(0, 5), [], `${cases.length} strings, every one equal to Date.parse`);
});
