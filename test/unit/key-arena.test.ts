// The shared key arena: each key written once, named by index; any reader gets the same strings back;
// a full arena starts a new generation; a key UTF-8 cannot hold is never named.
import { MessageChannel } from 'node:worker_threads';
import t from 'tap';
import { KeyArena, KeyArenaReader, type KeyArenaRef } from '../../src/core/key-arena.js';

async function crossed<T>(value: T): Promise<T> {
  const { port1, port2 } = new MessageChannel();
  const got = new Promise<T>((resolve) => port2.once('message', resolve));
  port1.postMessage(value);
  const v = await got;
  port1.close();
  return v;
}

t.test('keys named once, read back equal across a thread boundary, growing past the first allocation', async (t) => {
  const arena = new KeyArena(8 * 1024 * 1024, 100_000);
  const keys = Array.from({ length: 30_000 }, (_, i) => `{"name":"cpu.${i % 9000}","unit":null,"groupby":{"host":"h-${i % 9000}","zone":"zóna-😀"},`);
  const a = arena.ids(keys)!;
  t.equal(arena.size, 9000, 'each distinct key once');
  t.equal(a.ids[0], a.ids[9000], 'a recurring key keeps its index');
  const reader = new KeyArenaReader();
  const got = reader.keys(await crossed(a.ref), await crossed(a.ids));
  t.same(got, keys, 'the same strings, non-ASCII included');
  const more = arena.ids(['new one', keys[5]!])!;
  t.equal(more.ref.generation, a.ref.generation);
  t.same(reader.keys(await crossed(more.ref), more.ids), ['new one', keys[5]]);
});

t.test('a full arena starts a new generation; a reader keeps only the newest', async (t) => {
  const arena = new KeyArena(1024, 10);
  const first = arena.ids(Array.from({ length: 8 }, (_, i) => `k${i}`))!;
  const second = arena.ids(['a', 'b', 'c'])!; // 11 keys do not fit 10: these three start generation 2
  t.equal(second.ref.generation, first.ref.generation + 1);
  t.same([...second.ids], [0, 1, 2]);
  const reader = new KeyArenaReader();
  t.same(reader.keys(second.ref, second.ids), ['a', 'b', 'c']);
  t.same(reader.keys(first.ref, first.ids), Array.from({ length: 8 }, (_, i) => `k${i}`), 'a task of the older generation still reads');
  t.equal(arena.ids(Array.from({ length: 11 }, (_, i) => `x${i}`)), null, 'more keys than a whole generation holds: null, sent as strings');
  t.equal(arena.ids(['y'.repeat(2000)]), null, 'a key over the arena\'s bytes: null');
});

t.test('a key with a lone surrogate is never named (UTF-8 would read it back as another string)', async (t) => {
  const arena = new KeyArena();
  t.equal(arena.ids(['fine', 'bad\ud800key']), null);
  const ok = arena.ids(['fine'])!;
  t.same(new KeyArenaReader().keys(ok.ref as KeyArenaRef, ok.ids), ['fine']);
});
