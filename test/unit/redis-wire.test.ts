// The lanes' RESP reader: XREADGROUP replies read as they arrive, split anywhere, keep the same
// entries as a whole-reply parse (SimpleReader) would give; the byte bound keeps the prefix the Lua
// script kept; and what is not RESP, or not XREADGROUP's shape, is an error, never a guess.
import t from 'tap';
import { RespProtocolError, SimpleError, SimpleReader, encodeCommand } from '../../src/sources/redis/resp.js';
import { ENTRY, XReadReader, type XReadOptions } from '../../src/sources/redis/wire.js';
import { Rng } from '../fixtures/gen.js';
import { readReply, xreadReply, type RespEntry } from '../fixtures/resp.js';

const opts = (o: Partial<XReadOptions> = {}): XReadOptions => ({ field: Buffer.from('data'), maxValueBytes: 1 << 20, limitBytes: 1 << 24, ...o });

/** What a reader kept, as plain values. */
function kept(r: XReadReader): unknown {
  const out = [];
  for (let i = 0; i < r.count; i++) {
    const st = r.state[i];
    out.push({
      id: r.ids[i],
      ms: r.idMs[i],
      seq: r.idSeq[i],
      state: st,
      ...(st === ENTRY.KEPT ? { value: Buffer.from(r.value(i)).toString('latin1'), size: r.valueSize[i] } : {}),
      ...(st === ENTRY.MISSING ? { names: r.names.get(i) } : {}),
    });
  }
  return { entries: out, more: r.more, largest: r.largest, keptBytes: r.keptBytes, error: r.error };
}

/** An id's two numbers as the reader gives them: each exact up to 15 digits, else -1 (both when ms is). */
function idNumbers(id: string): { ms: number; seq: number } {
  const m = /^(\d+)-(\d+)$/.exec(id);
  const ms = m !== null && m[1]!.length <= 15 ? Number(m[1]) : -1;
  return { ms, seq: ms >= 0 && m![2]!.length <= 15 ? Number(m![2]) : -1 };
}

/** The same from a whole-reply parse, the bound applied as READ_BOUNDED did (Lua, before this reader). */
function expected(reply: Buffer, o: XReadOptions): unknown {
  const s = new SimpleReader(1 << 30);
  s.reset();
  if (s.feed(reply, 0) !== reply.length) throw new Error('the reference parse did not read the reply whole');
  const v = s.value;
  if (v instanceof SimpleError) return { entries: [], more: false, largest: 0, keptBytes: 0, error: v.message };
  const entries = v === null ? [] : ((v as unknown[][])[0]![1] as Array<[Buffer, Buffer[] | null]>);
  const out = [];
  let bytes = 0;
  let largest = 0;
  let more = false;
  for (const [id, fields] of entries) {
    let b = id.length;
    for (const f of fields ?? []) b += f.length;
    largest = Math.max(largest, b);
    if (out.length > 0 && bytes >= o.limitBytes) {
      more = true;
      continue;
    }
    bytes += b;
    if (fields === null) {
      out.push({ id: id.toString(), ...idNumbers(id.toString()), state: ENTRY.DELETED });
      continue;
    }
    let k = -1;
    for (let i = 0; i + 1 < fields.length; i += 2) {
      if (fields[i]!.equals(o.field)) {
        k = i;
        break;
      }
    }
    if (k < 0) {
      const names = [];
      for (let i = 0; i < fields.length && names.length < 10; i += 2) names.push(JSON.stringify(fields[i]!.subarray(0, 256).toString('utf8').slice(0, 64)));
      out.push({ id: id.toString(), ...idNumbers(id.toString()), state: ENTRY.MISSING, names });
    } else {
      const value = fields[k + 1]!;
      out.push({ id: id.toString(), ...idNumbers(id.toString()), state: ENTRY.KEPT, value: value.subarray(0, o.maxValueBytes).toString('latin1'), size: value.length });
    }
  }
  return { entries: out, more, largest, keptBytes: bytes, error: null };
}

t.test('a reply split at every byte keeps what a whole-reply parse gives', async (t) => {
  const entries: RespEntry[] = [
    { id: '1700000000000-0', fields: ['data', '{"a":1}'] },
    { id: '1700000000000-1', fields: ['blob', 'x'.repeat(300), 'data', 'ü€'] },
    { id: '1700000000001-0', fields: null },
    { id: '1700000000002-0', fields: ['other', 'y', 'dat', 'z', 'datas', 'w'] },
    { id: '1700000000003-0', fields: ['data', '', 'data', 'second'] },
    { id: '18446744073709551615-18446744073709551615', fields: ['data', 'v'.repeat(70)] },
  ];
  const reply = xreadReply('stream-1', entries);
  const o = opts({ maxValueBytes: 64 });
  const want = expected(reply, o);
  t.same(kept(readReply(reply, o)), want, 'whole');
  let same = 0;
  for (let chunk = 1; chunk <= reply.length; chunk++) {
    const got = kept(readReply(reply, o, chunk));
    if (JSON.stringify(got) === JSON.stringify(want)) same++;
    else t.same(got, want, `chunks of ${chunk} bytes`);
  }
  t.equal(same, reply.length, `the same for chunks of 1 to ${reply.length} bytes`);
  const r = readReply(reply, o);
  t.equal(r.state[3], ENTRY.MISSING, 'names that start like REDIS_FIELD, or that it starts, are not it');
  t.same(r.names.get(3), ['"other"', '"dat"', '"datas"']);
  t.equal(Buffer.from(r.value(4)).toString(), '', 'the first REDIS_FIELD of an entry is its value, as before (an empty one too)');
  t.equal(r.valueSize[5], 70, 'a value longer than maxValueBytes keeps its size');
  t.equal(r.value(5).length, 64, 'and is cut to it');
});

/** Ids of 1 to 20 digits a part (the reader's numbers are exact to 15, and -1 beyond). */
function randomId(rng: Rng): string {
  const digits = () => {
    const n = rng.next() < 0.7 ? rng.int(1, 15) : rng.int(16, 20);
    let d = String(rng.int(1, 9));
    while (d.length < n) d += String(rng.int(0, 9));
    return rng.next() < 0.1 ? '0' : d;
  };
  return `${digits()}-${digits()}`;
}

t.test('random replies in random chunks: the same entries as a whole-reply parse, bound included', async (t) => {
  const rng = new Rng(2026);
  let checked = 0;
  for (let round = 0; round < 300; round++) {
    const n = rng.int(0, 30);
    const entries: RespEntry[] = [];
    for (let i = 0; i < n; i++) {
      if (rng.next() < 0.05) {
        entries.push({ id: randomId(rng), fields: null });
        continue;
      }
      const fields: Array<string | Buffer> = [];
      const k = rng.int(0, 4);
      const at = rng.next() < 0.85 ? rng.int(0, k) : -1;
      for (let j = 0; j <= k; j++) {
        fields.push(j === at ? 'data' : ['d', 'da', 'datum', 'other', 'DATA', '', 'dataa'][rng.int(0, 6)]!);
        fields.push(Buffer.from(Array.from({ length: rng.int(0, rng.next() < 0.1 ? 5000 : 80) }, () => rng.int(0, 255))));
      }
      entries.push({ id: randomId(rng), fields });
    }
    const reply = rng.next() < 0.05 ? xreadReply('s', null) : xreadReply(`s${round}`, entries);
    const o = opts({ maxValueBytes: rng.int(1, 200), limitBytes: rng.int(1, 20000) });
    const chunk = rng.int(1, 64);
    t.same(kept(readReply(reply, o, chunk)), expected(reply, o), `round ${round} (${n} entries, chunks of ${chunk}, limit ${o.limitBytes})`);
    checked++;
  }
  t.equal(checked, 300);
});

t.test('the byte bound: the entry that reaches the limit is the last kept, one entry at least; the rest is counted, not kept', async (t) => {
  // Each entry weighs 3 + 4 + 1 + 5 + 1000 = 1013 bytes (as the Lua script counted: id, names, values).
  const entries = Array.from({ length: 10 }, (_, i) => ({ id: `1-${i + 1}`, fields: ['data', 'x', 'other', 'y'.repeat(1000)] }));
  const reply = xreadReply('s', entries);
  const ids = (r: XReadReader) => r.ids.slice(0, r.count);
  const a = readReply(reply, opts({ limitBytes: 2500 }));
  t.same(ids(a), ['1-1', '1-2', '1-3'], '2,500 bytes: the third entry crosses it and is the last');
  t.ok(a.more, 'more: entries were delivered past it (pending, to be read again)');
  t.equal(a.largest, 1014, 'the largest entry of the reply, kept or not (1-10\'s id is a byte longer), which sizes the next COUNT');
  t.equal(a.keptBytes, 3 * 1013);
  t.ok(a.used <= 3, `only REDIS_FIELD's values are kept (${a.used} bytes), not the 1,000-byte field`);
  const b = readReply(reply, opts({ limitBytes: 1 }));
  t.same(ids(b), ['1-1'], 'one entry at least');
  const c = readReply(reply, opts({ limitBytes: 1 << 20 }));
  t.same([c.count, c.more], [10, false], 'all of them below the limit');
  // A megabyte value past the limit is read through, not held.
  const big = xreadReply('s', [{ id: '1-1', fields: ['data', 'a'] }, { id: '1-2', fields: ['data', 'b'.repeat(4 << 20)] }]);
  const d = readReply(big, opts({ limitBytes: 1, maxValueBytes: 1 << 30 }), 65536);
  t.same([d.count, d.more, d.largest], [1, true, 3 + 4 + (4 << 20)]);
  t.ok(d.data.length < 1 << 20, `the buffer did not grow to hold it (${d.data.length} bytes)`);
  const e = readReply(big, opts({ limitBytes: 1 << 30, maxValueBytes: 1000 }), 65536);
  t.same([e.count, e.valueLen[1], e.valueSize[1]], [2, 1000, 4 << 20], 'kept, a value is cut at maxValueBytes and keeps its size');
});

t.test('null, empty and error replies', async (t) => {
  const nil = readReply(Buffer.from('*-1\r\n'), opts());
  t.same([nil.count, nil.error, nil.largest], [0, null, 0], 'BLOCK timed out: nothing');
  const empty = readReply(xreadReply('s', []), opts());
  t.same([empty.count, empty.error], [0, null], 'an empty PEL');
  const err = readReply(Buffer.from('-NOGROUP No such key \'s\' or consumer group \'g\'\r\n'), opts());
  t.equal(err.error, "NOGROUP No such key 's' or consumer group 'g'", 'an error reply is kept whole, for the caller to tell NOGROUP');
  t.equal(err.count, 0);
  const resp3Null = readReply(Buffer.from('_\r\n'), opts());
  t.equal(resp3Null.count, 0, 'a RESP3 null is a null too');
});

t.test('what is not XREADGROUP\'s reply is a protocol error', async (t) => {
  const bad = {
    'an integer': ':1\r\n',
    'a simple string': '+OK\r\n',
    'an entry of three elements': '*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*3\r\n$3\r\n1-1\r\n*0\r\n*0\r\n',
    'a length that is not a number': '*x\r\n',
    'a bulk string without its CRLF': '*1\r\n*2\r\n$1\r\nsXY',
    'an id of 60 bytes': `*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$60\r\n${'1'.repeat(60)}\r\n*0\r\n`,
    'an error inside the reply': '*1\r\n*2\r\n$1\r\ns\r\n-ERR x\r\n',
    'nesting where there is none': '*1\r\n*2\r\n*1\r\n',
  };
  for (const [what, text] of Object.entries(bad)) {
    const r = new XReadReader(opts());
    r.reset();
    let thrown: unknown = null;
    try {
      r.feed(Buffer.from(text), 0);
    } catch (err) {
      thrown = err;
    }
    t.ok(thrown instanceof RespProtocolError && /^redis: /.test(thrown.message), `${what}: ${(thrown as Error | null)?.message}`);
  }
  const long = new XReadReader(opts());
  long.reset();
  t.throws(() => long.feed(Buffer.from(`-${'e'.repeat(70_000)}\r\n`), 0), /a reply line over/, 'a header line has a bound too');
});

t.test('a reader is reused: reset() drops the last reply whole', async (t) => {
  const r = new XReadReader(opts(), 1);
  r.reset();
  const first = xreadReply('s', Array.from({ length: 50 }, (_, i) => ({ id: `5-${i}`, fields: ['data', `v${i}`] })));
  t.equal(r.feed(first, 0), first.length);
  t.equal(r.count, 50, 'its arrays grow past their first capacity');
  r.reset();
  const second = xreadReply('s', [{ id: '6-0', fields: ['x', 'y'] }]);
  t.equal(r.feed(second, 0), second.length);
  t.same([r.count, r.ids[0], r.state[0], r.names.get(0), r.used], [1, '6-0', ENTRY.MISSING, ['"x"'], 0]);
  const big = new XReadReader(opts({ maxValueBytes: 8 << 20 }));
  big.reset();
  const large = xreadReply('s', [{ id: '7-0', fields: ['data', 'z'.repeat(6 << 20)] }]);
  big.feed(large, 0);
  t.ok(big.data.length >= 6 << 20, 'a large kept value grows the buffer');
  big.reset();
  big.feed(second, 0);
  big.reset();
  t.ok(big.data.length < 1 << 20, `and a reply that used little of it gives it back (${big.data.length} bytes)`);
});

t.test('resume(): a second reply read onto the first, as one read (the entry that sized it, then the rest); the bound counts both', async (t) => {
  const r = new XReadReader(opts({ limitBytes: 2500 }), 1);
  r.reset();
  const one = xreadReply('s', [{ id: '1-1', fields: ['data', 'x', 'other', 'y'.repeat(1000)] }]);
  t.equal(r.feed(one, 0), one.length);
  r.resume();
  const rest = xreadReply('s', Array.from({ length: 4 }, (_, i) => ({ id: `1-${i + 2}`, fields: ['data', `v${i}`, 'other', 'y'.repeat(1000)] })));
  t.equal(r.feed(rest, 0), rest.length);
  t.same(r.ids.slice(0, r.count), ['1-1', '1-2', '1-3'], 'the first reply\'s entry, then the second\'s until the bound (1,013 bytes each, 2,500 in all)');
  t.ok(r.more, 'the rest of the second reply is pending');
  t.same([Buffer.from(r.value(0)).toString(), Buffer.from(r.value(2)).toString()], ['x', 'v1'], 'values of both replies, in order');
  r.reset();
  t.equal(r.count, 0, 'reset() starts afresh');
});

t.test('take(): the kept values are handed on and never written again; the next reply gets a buffer of its own', async (t) => {
  const given: Uint8Array[] = [];
  const r = new XReadReader(opts({ allocate: (n) => (given.push(new Uint8Array(new SharedArrayBuffer(n))), given[given.length - 1]!) }));
  r.reset();
  const first = xreadReply('s', Array.from({ length: 3 }, (_, i) => ({ id: `8-${i}`, fields: ['data', `first-${i}`] })));
  r.feed(first, 0);
  const taken = r.take();
  const before = Buffer.from(taken.subarray(0, r.used)).toString();
  t.throws(() => r.resume(), /handed on/, 'a reply cannot be read onto values already handed on');
  r.reset();
  t.not(r.data, taken, 'reset() after take() starts a fresh buffer');
  t.equal(given.length, 2, 'from the allocator given');
  r.feed(xreadReply('s', [{ id: '9-0', fields: ['data', 'second'.repeat(20)] }]), 0);
  t.equal(Buffer.from(taken.subarray(0, before.length)).toString(), before, 'the handed-on values are untouched by the next reply');
  t.equal(Buffer.from(r.value(0)).toString(), 'second'.repeat(20));
  r.reset();
  t.equal(given.length, 2, 'a buffer not handed on is reused');
});

t.test('commands are RESP arrays of bulk strings, UTF-8 counted in bytes', async (t) => {
  t.equal(encodeCommand(['XREADGROUP', 'GROUP', 'g', 'c€']).toString(), '*4\r\n$10\r\nXREADGROUP\r\n$5\r\nGROUP\r\n$1\r\ng\r\n$4\r\nc€\r\n');
  const s = new SimpleReader(16);
  s.reset();
  t.throws(() => s.feed(Buffer.from('$17\r\n'), 0), /over 16 bytes/, 'a short reply that is not short is refused');
  s.reset();
  t.equal(s.feed(Buffer.from('+OK\r\n'), 0), 5);
  t.equal(s.value, 'OK');
});
