// Redis entry ids (ms-seq, two 64-bit numbers) -> the engine's positions (safe integers that grow
// along the lane), and back as far as acknowledgement needs.
//
// Almost every id maps to ms * 4096 + seq, exact and with no table: the natural position. Redis allows
// ids that mapping cannot hold in order: more than 4096 entries in one millisecond (`XADD key <ms>-*`,
// a MULTI, a producer's own clock), explicit ids like `2-4096`, and milliseconds up to 2^64 - 1. So a
// lane's positions are the natural ones shifted by segments: where the natural position of an entry
// would not lie above the one before it (after a millisecond with more than 4096 entries), or would
// come too near 2^53, a segment starts at that entry with the next free position, and the entries
// after it follow it naturally (position = segment start + their natural distance from its first
// entry). Order is kept, no two entries share a position, and nothing is refused.
//
// Segments are rare (one per burst, none for ids of XADD * below 4096 a millisecond), and kept in
// Redis before the entries they place are handed on, so a restart (or the instance that takes a dead
// consumer over) gives every entry read before the same position. One more fact is kept while the
// last entry read had seq >= 4096 (the mark): entries read after it must lie above it even if the
// entries in between were acknowledged early (dead-lettered or deleted) and are not read again.
// Without segments the positions are the old exact mapping: stored points stay valid as they are.
import { StreamstatsError } from '../../errors.js';
import { EXACT_DIGITS } from './ids.js';

const SPAN = 4096;
const SPAN_N = 4096n;
/** Highest position handed out: the batch ending after it (position + 1) is still a safe integer. */
export const MAX_POSITION = Number.MAX_SAFE_INTEGER - 1;
/**
 * Natural positions above this start a segment instead (ids from 2039-07-18 on, or explicit ones):
 * 2^44 positions stay in reserve for them, so an explicit id near 2^53 cannot use up the space.
 */
export const SOFT_LIMIT = 2 ** 53 - 2 ** 44;

/** An id's natural position (ms * 4096 + seq): a number when exact, else a bigint. */
type Natural = number | bigint;

export interface Segment {
  /** The id of the segment's first entry. */
  readonly id: string;
  readonly natural: Natural;
  readonly position: number;
}

/** The last entry read when its seq was 4096 or more: entries never read before it must lie above it. */
export interface Mark {
  readonly id: string;
  readonly position: number;
}

/** What a read changed in the lane's segments and mark, to be stored before its entries go on. */
export interface PositionChanges {
  readonly segments: readonly Segment[];
  /** The new mark, null to delete the stored one, undefined when unchanged. */
  readonly mark: Mark | null | undefined;
}

const ZERO: Segment = { id: '0-0', natural: 0, position: 0 };

function split(id: string): [string, string] {
  const dash = id.indexOf('-');
  if (dash <= 0 || dash === id.length - 1) throw new StreamstatsError('STREAMSTATS_SOURCE', `redis: ${JSON.stringify(id)} is not a stream entry id (ms-seq)`, { canRetry: false });
  return [id.slice(0, dash), id.slice(dash + 1)];
}

/**
 * The decimal number in id[s..e) when it has 1 to 15 digits (exact as a double), else -1. Entry ids
 * are read once per entry on the main thread: no slice or array for the common ones.
 */
function digitsOf(id: string, s: number, e: number): number {
  if (e <= s || e - s > EXACT_DIGITS) return -1;
  let v = 0;
  for (let i = s; i < e; i++) {
    const d = id.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    v = v * 10 + d;
  }
  return v;
}

export function natural(id: string): Natural {
  const dash = id.indexOf('-');
  const ms = digitsOf(id, 0, dash);
  const seq = ms < 0 ? -1 : digitsOf(id, dash + 1, id.length);
  if (seq >= 0) {
    const n = ms * SPAN + seq;
    // Above 2^53 - 1 the sum rounds to 2^53 or more, so this test is exact.
    if (n <= Number.MAX_SAFE_INTEGER) return n;
  }
  const [msText, seqText] = split(id);
  return BigInt(msText) * SPAN_N + BigInt(seqText);
}

/** Compares two ids as Redis orders them (decimal numbers without leading zeros). */
export function compareIds(a: string, b: string): number {
  const [am, as] = split(a);
  const [bm, bs] = split(b);
  return cmpDecimal(am, bm) || cmpDecimal(as, bs);
}

function cmpDecimal(a: string, b: string): number {
  return a.length !== b.length ? a.length - b.length : a < b ? -1 : a > b ? 1 : 0;
}

/** Milliseconds of an entry id (its append time), as a number (approximate above 2^53). */
export function idMs(id: string): number {
  const dash = id.indexOf('-');
  const ms = digitsOf(id, 0, dash);
  return ms >= 0 ? ms : Number(split(id)[0]);
}

function seqAtLeastSpan(id: string): boolean {
  const dash = id.indexOf('-');
  const seq = dash > 0 ? digitsOf(id, dash + 1, id.length) : -1;
  if (seq >= 0) return seq >= SPAN;
  const text = split(id)[1];
  return text.length > 4 || Number(text) >= SPAN;
}

/** Position of `id` in segment `s`: its start plus the natural distance (Infinity when far beyond 2^53). */
function inSegment(s: Segment, n: Natural): number {
  if (typeof n === 'number' && typeof s.natural === 'number') return s.position + (n - s.natural);
  const p = BigInt(s.position) + (BigInt(n) - BigInt(s.natural));
  return p > BigInt(Number.MAX_SAFE_INTEGER) ? Infinity : Number(p);
}

/** The id with natural position n (seq < 4096): every id whose natural position is below n sorts before it. */
function naturalId(n: Natural): string {
  if (typeof n === 'number') return `${Math.floor(n / SPAN)}-${n % SPAN}`;
  return `${n / SPAN_N}-${n % SPAN_N}`;
}

/** The id just before `id` (the start of a consumer group that is to deliver `id` first). */
function before(id: string): string {
  const [ms, seq] = split(id);
  if (seq !== '0') return `${ms}-${BigInt(seq) - 1n}`;
  if (ms !== '0') return `${BigInt(ms) - 1n}-18446744073709551615`;
  return '0-0';
}

/**
 * One lane's positions: segments and mark as stored, where the lane resumes (`floor`: the stored
 * point's position and appliedEnd, below which nothing new may be placed), and what a read changed.
 */
export class LanePositions {
  /** Ordered by id (and so by position). */
  readonly #segments: Segment[];
  #mark: Mark | null;
  /** The stored mark while an entry at or before it may still be read again. */
  #guard: Mark | null;
  readonly #floor: number;
  #last = -1;
  #lastId = '';
  #added: Segment[] = [];
  /** An entry with seq >= 4096 was read (or a mark stored): ids no longer sort like natural positions. */
  #overflowSeen: boolean;
  #markChanged = false;

  constructor(segments: readonly Segment[], mark: Mark | null, floor: number) {
    this.#segments = [...segments].sort((a, b) => a.position - b.position);
    this.#mark = mark;
    this.#guard = mark;
    this.#floor = Math.max(0, floor);
    this.#overflowSeen = mark !== null;
  }

  get segments(): readonly Segment[] {
    return this.#segments;
  }

  /**
   * The positions a lane read again from a point has, as a restart would build them from what is
   * stored (every segment and the mark are stored before their entries go on): entries read before
   * get their positions again, new ones follow from `floor` (where the replayed lane resumes).
   */
  rewound(floor: number): LanePositions {
    return new LanePositions(this.#segments, this.#mark, floor);
  }

  /**
   * Every position is its entry's natural one (no segment, no entry with seq >= 4096): an entry's id
   * sorts below idBelow(p) exactly when its position is below p.
   */
  get natural(): boolean {
    return this.#segments.length === 0 && !this.#overflowSeen;
  }

  /** The last position given in this run (-1 before the first). */
  get last(): number {
    return this.#last;
  }

  /** Id of the last entry given a position in this run ('' before the first). */
  get lastId(): string {
    return this.#lastId;
  }

  #segmentOf(id: string): Segment {
    const s = this.#segments;
    // Reads go forward: the last segment, mostly.
    if (s.length === 0) return ZERO;
    if (compareIds(s[s.length - 1]!.id, id) <= 0) return s[s.length - 1]!;
    let lo = 0;
    let hi = s.length - 1;
    if (compareIds(s[0]!.id, id) > 0) return ZERO;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (compareIds(s[mid]!.id, id) <= 0) lo = mid;
      else hi = mid - 1;
    }
    return s[lo]!;
  }

  /** The position an entry read before has (or would have): for acknowledgement, no state changes. */
  positionOf(id: string): number {
    return inSegment(this.#segmentOf(id), natural(id));
  }

  /**
   * Gives the next entry of the lane (ids in the order read) its position. ms and seq: the id's two
   * numbers when the caller has them (the wire reader reads them from the id's bytes), else -1.
   */
  assign(id: string, ms = -1, seq = -1): number {
    const exact = ms >= 0 && seq >= 0 && ms * SPAN + seq <= Number.MAX_SAFE_INTEGER;
    const n = exact ? ms * SPAN + seq : natural(id);
    const seg = this.#segmentOf(id);
    const at = inSegment(seg, n);
    let lo = this.#last + 1;
    if (this.#guard !== null && compareIds(id, this.#guard.id) > 0) {
      lo = Math.max(lo, this.#guard.position + 1);
      this.#guard = null;
    }
    let pos: number;
    // An entry read before always gets its position again: it is a segment's first entry, or it
    // follows its segment naturally above the entry before it. Only entries never read before start
    // segments, so the floor (where the lane resumed) may apply to them.
    if (seg.id === id || (at >= lo && at <= SOFT_LIMIT)) {
      pos = at;
    } else {
      pos = Math.max(lo, this.#floor);
      if (pos > MAX_POSITION) {
        throw new StreamstatsError('STREAMSTATS_SOURCE', `redis: no position left for entry ${id}: the lane has used every position below 2^53 (ids from 2039-07 on, or explicit ids near the largest, take one each)`, { canRetry: false });
      }
      const s = { id, natural: n, position: pos };
      this.#segments.push(s);
      this.#added.push(s);
    }
    this.#last = pos;
    this.#lastId = id;
    if (!this.#overflowSeen && (exact ? seq >= SPAN : seqAtLeastSpan(id))) this.#overflowSeen = true;
    return pos;
  }

  /** What the entries assigned since the last call changed; null when nothing needs storing. */
  takeChanges(): PositionChanges | null {
    const overflowed = this.#lastId !== '' && seqAtLeastSpan(this.#lastId);
    let mark: Mark | null | undefined;
    // The stored mark stays while entries before it are read again: it is still to be passed.
    if (this.#guard !== null) mark = undefined;
    else if (overflowed && (this.#mark === null || this.#mark.id !== this.#lastId)) mark = { id: this.#lastId, position: this.#last };
    else if (!overflowed && this.#mark !== null) mark = null;
    if (mark !== undefined) this.#mark = mark;
    if (this.#added.length === 0 && mark === undefined) return null;
    const out = { segments: this.#added, mark };
    this.#added = [];
    return out;
  }

  /**
   * An id B such that every entry read so far with a position below `position` sorts before B (the
   * upper end of the XPENDING range to acknowledge; entries at or above it may sort before B too).
   */
  idBelow(position: number): string {
    let seg = ZERO;
    for (const s of this.#segments) if (s.position < position) seg = s;
    const n = typeof seg.natural === 'number' && seg.natural + (position - seg.position) <= Number.MAX_SAFE_INTEGER
      ? seg.natural + (position - seg.position)
      : BigInt(seg.natural) + BigInt(position - seg.position);
    return naturalId(n);
  }

  /**
   * An id L such that every entry at or above `position` sorts after L: where a consumer group
   * recreated for the lane starts. Natural positions give the id just before the position's own;
   * where an entry had seq >= 4096 (it may sort before ids of lower position), the segment's start.
   */
  idBefore(position: number): string {
    let seg = ZERO;
    for (const s of this.#segments) if (s.position <= position) seg = s;
    if (this.#overflowSeen) return before(seg.id);
    const at = naturalId(typeof seg.natural === 'number' && seg.natural + (position - seg.position) <= Number.MAX_SAFE_INTEGER
      ? seg.natural + (position - seg.position)
      : BigInt(seg.natural) + BigInt(position - seg.position));
    return before(compareIds(at, seg.id) < 0 ? seg.id : at);
  }

  /**
   * Segments whose entries all lie below `position` (the next segment starts at or below it) are
   * not needed once those entries are acknowledged; the last one is always kept. Returns the
   * position below which stored segments may be deleted (null: none).
   */
  dropBelow(position: number): number | null {
    let k = 0;
    while (k + 1 < this.#segments.length && this.#segments[k + 1]!.position <= position) k++;
    if (k === 0) return null;
    this.#segments.splice(0, k);
    return this.#segments[0]!.position;
  }
}
