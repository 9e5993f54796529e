// The fast path's reader for FORMAT=json: the configured paths (JSON_NAME, JSON_VALUE,
// JSON_TIMESTAMP, JSON_UNIT, JSON_DIMENSIONS) as a tree of keys, walked over the message's bytes in
// one pass. The spans of the fields that decide the series (name, unit, dimensions: those read from
// a path) are the signature; the value and the event time are converted here. Outside the subset (-1,
// the slow path decides): a key on a path repeated in its object (JSON.parse keeps the last); an
// array where a path goes on (getPath indexes arrays); a value that is not a number, an event time
// that is neither a number nor an ISO text in its plain form; the value or the event time absent.
// A path through something that is not an object (a string, null) reads as absent there, as getPath does.
import type { JsonMapping } from '../formats/spec.js';
import { isNumberStart, isoMs, type FormatReader, type ScanOut } from './formats.js';
import { CLOSED, keyIs, type JsonScanner } from './json.js';

interface KeyNode {
  /** The key's UTF-8 bytes, matched against the key's raw text (a key with escapes defers anyway). */
  readonly key: Uint8Array;
  /** Bit of this key in its object's seen mask. */
  readonly bit: number;
  /** Signature fields whose text is this key's value. */
  readonly fields: number[];
  value: boolean;
  time: boolean;
  readonly children: KeyNode[];
}

/** Keys one object of the tree may hold: its seen mask is one 31-bit integer. */
const MAX_KEYS_PER_OBJECT = 31;

export interface MappedReader {
  readonly read: FormatReader;
  /** Signature fields: name, unit and dimensions read from paths, in that order. */
  readonly fields: number;
}

/** The reader of a mapping, or null for one the fast path does not take (a value constant that is not a number). */
export function mappedReader(m: JsonMapping): MappedReader | null {
  const root: KeyNode = { key: new Uint8Array(0), bit: 0, fields: [], value: false, time: false, children: [] };
  const at = (path: readonly string[]): KeyNode | null => {
    let node = root;
    for (const seg of path) {
      const key = Buffer.from(seg, 'utf8');
      let child = node.children.find((c) => Buffer.compare(c.key, key) === 0);
      if (child === undefined) {
        if (node.children.length >= MAX_KEYS_PER_OBJECT) return null;
        child = { key, bit: 1 << node.children.length, fields: [], value: false, time: false, children: [] };
        node.children.push(child);
      }
      node = child;
    }
    return node === root ? null : node;
  };
  let fields = 0;
  for (const ref of [m.name, ...(m.unit === null ? [] : [m.unit]), ...m.dimensions]) {
    if (!('path' in ref)) continue;
    const node = at(ref.path);
    if (node === null) return null;
    node.fields.push(fields++);
  }
  let constant: number | null = null;
  if ('constant' in m.value) {
    // A text constant is refused by every message (requireValue): nothing for the fast path to take.
    if (typeof m.value.constant !== 'number') return null;
    constant = m.value.constant;
  } else {
    const node = at(m.value.path);
    if (node === null) return null;
    node.value = true;
  }
  const time = at(m.timestamp.path);
  if (time === null) return null;
  time.time = true;
  const need = constant === null ? 3 : 2;
  let found = 0;

  const readNode = (s: JsonScanner, v: number, n: KeyNode, out: ScanOut, depth: number): number => {
    const c = s.buf[v];
    let e = -2;
    if (n.children.length > 0) {
      if (c === 0x7b) e = readObject(s, v, n, out, depth + 1);
      else if (c === 0x5b) return -1;
    }
    if (n.value) {
      if (!isNumberStart(c)) return -1;
      e = s.number(v);
      out.value = s.num;
      found |= 1;
    }
    if (n.time) {
      if (isNumberStart(c)) {
        e = s.number(v);
        out.tsMs = s.num;
      } else if (c === 0x22) {
        e = s.string(v);
        if (e < 0) return -1;
        out.tsMs = isoMs(s.buf, v + 1, e - 1);
        if (Number.isNaN(out.tsMs)) return -1;
      } else {
        return -1;
      }
      found |= 2;
    }
    if (e === -2) e = s.value(v, depth);
    if (e < 0) return -1;
    const spans = out.spans;
    for (const f of n.fields) {
      spans[2 * f] = v;
      spans[2 * f + 1] = e;
    }
    return e;
  };

  const readObject = (s: JsonScanner, p: number, node: KeyNode, out: ScanOut, depth: number): number => {
    const buf = s.buf;
    const children = node.children;
    let k = s.open(p, depth);
    let seen = 0;
    while (k !== CLOSED) {
      const v = s.member(k);
      if (v < 0) return -1;
      const ke = s.keyEnd;
      let child: KeyNode | undefined;
      for (let i = 0; i < children.length; i++) {
        if (keyIs(buf, k, ke, children[i]!.key)) {
          child = children[i];
          break;
        }
      }
      let e: number;
      if (child === undefined) {
        e = s.value(v, depth);
      } else {
        if ((seen & child.bit) !== 0) return -1;
        seen |= child.bit;
        e = readNode(s, v, child, out, depth);
      }
      if (e < 0) return -1;
      k = s.next(e);
    }
    return s.closedAt;
  };

  const read: FormatReader = (s, p, out) => {
    found = 0;
    if (constant !== null) out.value = constant;
    const e = readObject(s, p, root, out, 1);
    return e < 0 || (found & need) !== need ? -1 : e;
  };
  return { read, fields };
}
