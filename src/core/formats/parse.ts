// A message's bytes to a JSON value, or the reason it is not one (the slow path of the decoder;
// src/core/scan is the fast one), and the cap on the dead letters of one JSON-array message.
import { isUtf8 } from 'node:buffer';
import type { Reject } from '../messages.js';

/** escapes: the message contains "\u", the only way JSON text yields U+0000 or an unpaired surrogate. */
export type ParsedMessage = { ok: true; value: unknown; escapes: boolean } | { ok: false; reason: Reject['reason']; detail: string };

export function parseMessage(buf: Buffer, start: number, end: number, maxBytes: number): ParsedMessage {
  const len = end - start;
  if (len === 0) return { ok: false, reason: 'empty_message', detail: 'message: empty value (tombstone or blank line)' };
  if (len > maxBytes) {
    return { ok: false, reason: 'too_large', detail: `message: ${len} bytes, more than MAX_MESSAGE_BYTES=${maxBytes}` };
  }
  const view = buf.subarray(start, end);
  if (!isUtf8(view)) return { ok: false, reason: 'invalid_utf8', detail: 'message: not valid UTF-8' };
  try {
    const text = buf.toString('utf8', start, end);
    return { ok: true, value: JSON.parse(text), escapes: text.indexOf('\\u') !== -1 };
  } catch (err) {
    // Deep nesting surfaces as a RangeError from the parser: still a malformed message, not a crash.
    const msg = err instanceof Error ? err.message : String(err);
    return { ok: false, reason: 'malformed_json', detail: `message: ${msg}` };
  }
}

/**
 * Element dead letters one JSON-array message may produce; the rest of its rejected elements become
 * one summary entry (counts by reason), so a 1 MiB message of 500,000 bad elements cannot turn into
 * 500,000 dead letters.
 */
export const MAX_ELEMENT_DEAD_LETTERS = 100;

/** The rejects of one array message's elements: the first MAX_ELEMENT_DEAD_LETTERS, then one summary. */
export class ElementRejects {
  #shown = 0;
  #more = 0;
  #counts: Partial<Record<Reject['reason'], number>> | null = null;

  constructor(
    private readonly msg: number,
    private readonly onReject: (r: Reject) => void,
  ) {}

  readonly add = (r: Reject): void => {
    if (this.#shown < MAX_ELEMENT_DEAD_LETTERS) {
      this.#shown++;
      this.onReject(r);
      return;
    }
    this.#counts ??= {};
    this.#counts[r.reason] = (this.#counts[r.reason] ?? 0) + 1;
    this.#more++;
  };

  finish(): void {
    const c = this.#counts;
    if (c === null) return;
    const [top] = Object.entries(c).sort((a, b) => b[1] - a[1])[0]! as [Reject['reason'], number];
    const list = Object.entries(c).map(([k, n]) => `${k} ${n}`).join(', ');
    this.onReject({
      msg: this.msg,
      elem: -1,
      reason: top,
      detail: `message: ${this.#more} more rejected elements beyond the first ${MAX_ELEMENT_DEAD_LETTERS} (${list}); this entry stands for all of them`,
      counts: c,
    });
  }
}
