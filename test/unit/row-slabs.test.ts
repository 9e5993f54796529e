// Rows' bytes cross from a lane owner in slabs of shared memory it reuses once the main thread has
// written them; with every slab held (writes far behind) a chunk crosses in a buffer of its own.
import t from 'tap';
import type { RowsWire } from '../../src/core/messages.js';
import { RowSlabs, releaseSlab } from '../../src/windows/row-slabs.js';

function wire(text: string): RowsWire {
  const ndjson = Buffer.from(text);
  const ends: number[] = [];
  for (let i = ndjson.indexOf(0x0a); i >= 0; i = ndjson.indexOf(0x0a, i + 1)) ends.push(i);
  return { kind: 'rows', ndjson, lineEnds: Int32Array.from(ends), keys: null, keyEnds: null, seconds: 0 };
}

const text = (w: RowsWire): string => Buffer.from(w.ndjson.buffer, w.ndjson.byteOffset, w.ndjson.byteLength).toString('utf8');

t.test('a placed chunk reads the same from shared memory; a released slab takes the next chunk', async (t) => {
  const slabs = new RowSlabs({ maxSlabs: 4, minBytes: 64 });
  const a = slabs.place(wire('{"a":1}\n{"b":2}\n'));
  t.ok(a.slab instanceof SharedArrayBuffer, 'in shared memory');
  t.ok(a.wire.ndjson.buffer === a.slab && a.wire.lineEnds.buffer === a.slab, 'lines and their ends in the slab');
  t.equal(text(a.wire), '{"a":1}\n{"b":2}\n');
  t.same([...a.wire.lineEnds], [7, 15]);
  const b = slabs.place(wire('{"c":3}\n'));
  t.not(b.slab, a.slab, 'a held slab is not written over');
  t.equal(text(a.wire), '{"a":1}\n{"b":2}\n', 'the first chunk is intact');
  releaseSlab(a.slab!);
  const c = slabs.place(wire('{"d":4}\n'));
  t.equal(c.slab, a.slab, 'the released slab is reused');
  t.equal(text(c.wire), '{"d":4}\n');
  t.equal(slabs.size, 2);
});

t.test('a chunk bigger than every free slab gets a slab of its size; with all held, a buffer of its own', async (t) => {
  const slabs = new RowSlabs({ maxSlabs: 2, minBytes: 64 });
  const big = `${'{"x":"' + 'y'.repeat(200) + '"}\n'}`.repeat(3);
  const a = slabs.place(wire('{"a":1}\n'));
  const b = slabs.place(wire(big));
  t.ok(b.slab!.byteLength >= Buffer.byteLength(big), `a slab of ${b.slab!.byteLength} bytes`);
  t.equal(text(b.wire), big);
  const c = slabs.place(wire('{"c":3}\n'));
  t.equal(c.slab, null, 'every slab held and no more may be made: no slab');
  t.equal(text(c.wire), '{"c":3}\n', 'the rows still cross, in their own buffer');
  releaseSlab(a.slab!);
  const d = slabs.place(wire(big));
  t.ok(d.slab !== null && d.slab !== a.slab && d.slab.byteLength >= Buffer.byteLength(big), 'the small free slab made room for one big enough');
  t.equal(slabs.size, 2, 'never more than maxSlabs');
});

t.test('the slabs\' bytes stay within maxBytes: a chunk that would pass them crosses in its own buffer', async (t) => {
  const slabs = new RowSlabs({ maxSlabs: 8, maxBytes: 1024, minBytes: 256 });
  const line = `{"x":"${'y'.repeat(100)}"}\n`;
  const held = [0, 1, 2, 3].map(() => slabs.place(wire(line)));
  t.ok(held.every((h) => h.slab !== null), 'four slabs of 256 bytes');
  t.equal(slabs.bytes, 1024);
  t.equal(slabs.place(wire(line)).slab, null, 'a fifth would pass maxBytes');
  t.equal(slabs.place(wire(line.repeat(20))).slab, null, 'so would one chunk bigger than maxBytes alone');
  releaseSlab(held[0]!.slab!);
  releaseSlab(held[1]!.slab!);
  const big = slabs.place(wire(line.repeat(3)));
  t.ok(big.slab !== null && big.slab.byteLength === 512, 'two free small slabs gave way to one of 512 bytes');
  t.ok(slabs.bytes <= 1024, `${slabs.bytes} bytes kept`);
});

t.test('identity keys and their ends cross in the slab; a wire of scratch views is copied out when no slab is free', async (t) => {
  const slabs = new RowSlabs({ maxSlabs: 1, minBytes: 64 });
  const scratchKeys = Buffer.from('["t",0,"a"]["t",0,"b"]');
  const scratchEnds = Int32Array.from([11, 22, 99]);
  const withKeys = (text: string): RowsWire => ({ ...wire(text), keys: scratchKeys.subarray(0, 22), keyEnds: scratchEnds.subarray(0, 2) });
  const a = slabs.place(withKeys('{"a":1}\n{"b":2}\n'), true);
  t.ok(a.slab !== null && a.wire.keys!.buffer === a.slab && a.wire.keyEnds!.buffer === a.slab, 'keys and key ends in the slab');
  t.equal(Buffer.from(a.wire.keys!).toString(), '["t",0,"a"]["t",0,"b"]');
  t.same([...a.wire.keyEnds!], [11, 22]);
  t.equal(a.wire.keyEnds!.byteOffset % 4, 0, 'key ends aligned');
  const b = slabs.place(withKeys('{"c":3}\n{"d":4}\n'), true);
  t.equal(b.slab, null, 'the one slab is held');
  scratchKeys.fill(0x20);
  scratchEnds.fill(0);
  t.equal(Buffer.from(b.wire.keys!).toString(), '["t",0,"a"]["t",0,"b"]', 'the keys were copied out of the scratch');
  t.same([...b.wire.keyEnds!], [11, 22], 'and their ends');
  t.equal(text(b.wire), '{"c":3}\n{"d":4}\n');
  t.not(b.wire.ndjson.buffer, a.wire.ndjson.buffer);
  t.equal(Buffer.from(a.wire.keys!).toString(), '["t",0,"a"]["t",0,"b"]', 'the placed chunk does not share the scratch');
});
