import t from 'tap';
import { Decoder, dictionaryBytesFor } from '../../src/core/decode.js';
import { SeriesDictionaries } from '../../src/pool/dictionary.js';
import { pack, settings } from '../fixtures/gen.js';

const msg = (name: string, host: string, ts: number) => JSON.stringify({ metric: { name, dimensions: { host }, timestamp: ts, value: ts % 7 } });

/** Everything but the timing, which differs between two runs. */
function untimed<T extends { decodeSeconds: number }>(r: T): Omit<T, 'decodeSeconds'> {
  const { decodeSeconds: _, ...rest } = r;
  return rest;
}

function batch(names: string[], ts: number) {
  return pack(names.map((n, i) => msg(n, `h${i % 3}`, ts + i)));
}

t.test('series keys cross once per dictionary; expanded results equal plain decoding', async (t) => {
  const worker = new Decoder(settings());
  const plain = new Decoder(settings());
  const dicts = new SeriesDictionaries(4);
  const names = Array.from({ length: 30 }, (_, i) => `m${i}`);
  let sent = 0;
  for (let round = 0; round < 5; round++) {
    const b1 = batch(names, 1_700_000_000_000 + round * 1000);
    const b2 = batch(names, 1_700_000_000_000 + round * 1000);
    const wire = worker.decodeBatchCompact(b1.buffer, b1.offsets, 0);
    sent += wire.newKeys.length;
    t.same(untimed(dicts.expand(wire)), untimed(plain.decodeBatch(b2.buffer, b2.offsets, 0)), `round ${round}: same result`);
    if (round > 0) t.equal(wire.newKeys.length, 0, `round ${round}: no key sent again`);
  }
  t.equal(sent, 30, 'each of the 30 series keys crossed once');
});

t.test('a full dictionary starts a new one; the main thread follows', async (t) => {
  const worker = new Decoder(settings(), { maxDictionary: 10 });
  const plain = new Decoder(settings());
  const dicts = new SeriesDictionaries(4);
  const seenDicts = new Set<number>();
  for (let round = 0; round < 6; round++) {
    const names = Array.from({ length: 8 }, (_, i) => `r${round}-${i}`);
    const b1 = batch(names, 1_700_000_000_000);
    const b2 = batch(names, 1_700_000_000_000);
    const wire = worker.decodeBatchCompact(b1.buffer, b1.offsets, 0);
    seenDicts.add(wire.dict);
    t.same(untimed(dicts.expand(wire)), untimed(plain.decodeBatch(b2.buffer, b2.offsets, 0)), `round ${round}: same result`);
  }
  t.ok(seenDicts.size >= 3, `the dictionary was replaced when full (${seenDicts.size} dictionaries)`);
});

t.test('an id the main thread never learned is an error, not a wrong series', async (t) => {
  const dicts = new SeriesDictionaries(2);
  const w = new Decoder(settings());
  const b = batch(['a'], 1_700_000_000_000);
  const wire = w.decodeBatchCompact(b.buffer, b.offsets, 0);
  t.throws(() => dicts.expand({ ...wire, newKeys: [] }), /unknown in dictionary/);
});

t.test('a dictionary over its byte bound starts over too; the main thread follows', async (t) => {
  const worker = new Decoder(settings(), { maxDictionaryBytes: 4000 });
  const plain = new Decoder(settings());
  const dicts = new SeriesDictionaries(4);
  const seen = new Set<number>();
  for (let round = 0; round < 4; round++) {
    const names = Array.from({ length: 10 }, (_, i) => `bytes-${round}-${i}`);
    const b1 = batch(names, 1_700_000_000_000);
    const b2 = batch(names, 1_700_000_000_000);
    const wire = worker.decodeBatchCompact(b1.buffer, b1.offsets, 0);
    seen.add(wire.dict);
    t.same(untimed(dicts.expand(wire)), untimed(plain.decodeBatch(b2.buffer, b2.offsets, 0)), `round ${round}: same result`);
  }
  t.ok(seen.size >= 2, `replaced when over the byte bound (${seen.size} dictionaries)`);
});

t.test('a decoder that starts over retires its dictionary: the main thread keeps one, not every full one', async (t) => {
  const worker = new Decoder(settings(), { maxDictionary: 10 });
  const plain = new Decoder(settings());
  // Room for many: only retirement may keep the count down.
  const dicts = new SeriesDictionaries(100);
  const seen = new Set<number>();
  for (let round = 0; round < 20; round++) {
    const names = Array.from({ length: 8 }, (_, i) => `retire-${round}-${i}`);
    const b1 = batch(names, 1_700_000_000_000);
    const b2 = batch(names, 1_700_000_000_000);
    const wire = worker.decodeBatchCompact(b1.buffer, b1.offsets, 0);
    seen.add(wire.dict);
    t.same(untimed(dicts.expand(wire)), untimed(plain.decodeBatch(b2.buffer, b2.offsets, 0)), `round ${round}: same result`);
  }
  t.ok(seen.size >= 10, `${seen.size} dictionaries in turn`);
  t.equal(dicts.size, 1, 'only the current one is held');
});

t.test('the retired dictionary travels with the next result; replaced workers\' are dropped least recently used', async (t) => {
  const dicts = new SeriesDictionaries(3);
  const a = new Decoder(settings(), { maxDictionary: 2 });
  const b1 = batch(['x', 'y'], 1_700_000_000_000);
  const first = a.decodeBatchCompact(b1.buffer, b1.offsets, 0);
  t.same(first.retired, []);
  dicts.expand(first);
  const b2 = batch(['x'], 1_700_000_000_000);
  const next = a.decodeBatchCompact(b2.buffer, b2.offsets, 0);
  t.not(next.dict, first.dict, 'full: started over');
  t.same(next.retired, [first.dict], 'the abandoned dictionary travels with the next result');
  dicts.expand(next);
  t.equal(dicts.size, 1);
  // Three dead workers' dictionaries and a live one used after them: the live one stays.
  for (let k = 0; k < 3; k++) {
    const dead = new Decoder(settings());
    const b = batch([`dead${k}`], 1_700_000_000_000);
    dicts.expand(dead.decodeBatchCompact(b.buffer, b.offsets, 0));
    const again = batch(['y'], 1_700_000_000_000);
    dicts.expand(a.decodeBatchCompact(again.buffer, again.offsets, 0));
  }
  t.equal(dicts.size, 3, 'bounded by count');
  const last = batch(['y'], 1_700_000_000_000);
  t.doesNotThrow(() => dicts.expand(a.decodeBatchCompact(last.buffer, last.offsets, 0)), 'the live dictionary was never the one dropped');
});

t.test('DecoderSettings.dictionaryBytes bounds the dictionary (a quarter of the worker heap limit)', async (t) => {
  t.equal(dictionaryBytesFor(512), 128 * 1024 * 1024, 'the default worker heap keeps the 128 MiB bound');
  t.equal(dictionaryBytesFor(64), 16 * 1024 * 1024);
  const worker = new Decoder({ ...settings(), dictionaryBytes: 4000 });
  const seen = new Set<number>();
  for (let round = 0; round < 4; round++) {
    const b = batch(Array.from({ length: 10 }, (_, i) => `db-${round}-${i}`), 1_700_000_000_000);
    seen.add(worker.decodeBatchCompact(b.buffer, b.offsets, 0).dict);
  }
  t.ok(seen.size >= 2, `started over at 4000 estimated bytes (${seen.size} dictionaries)`);
});
