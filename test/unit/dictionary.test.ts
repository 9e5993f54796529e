import t from 'tap';
import { Decoder } from '../../src/core/decode.js';
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
