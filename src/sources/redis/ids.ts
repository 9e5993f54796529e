// An entry id's milliseconds and sequence read from its bytes (wire.ts), so that positions and batch
// times (position.ts, entries.ts) need not parse the id's string again.
// digitsOf (position.ts) is this on strings, kept apart: one helper for both would take each digit through a callback or a string, on the byte path every entry takes.

/** Decimal digits a number may have and still be exact as a double. */
export const EXACT_DIGITS = 15;

/** Where a reader keeps each entry's id as numbers. */
export interface IdNumbers {
  idMs: Float64Array;
  idSeq: Float64Array;
}

/**
 * into.idMs[i] and into.idSeq[i] from the id in bytes[0, len): each part's value when it is 1 to
 * EXACT_DIGITS decimal digits, else -1 (the sequence is -1 too when the milliseconds are).
 */
export function readIdNumbers(bytes: Uint8Array, len: number, into: IdNumbers, i: number): void {
  let ms = 0;
  let seq = 0;
  let k = 0;
  for (; k < len; k++) {
    const d = bytes[k]! - 0x30;
    if (d < 0 || d > 9) break;
    ms = ms * 10 + d;
  }
  if (k === 0 || k > EXACT_DIGITS || k >= len - 1 || bytes[k] !== 0x2d) ms = -1;
  const dash = k;
  for (k = dash + 1; k < len; k++) {
    const d = bytes[k]! - 0x30;
    if (d < 0 || d > 9) break;
    seq = seq * 10 + d;
  }
  if (ms < 0 || k !== len || len - dash - 1 > EXACT_DIGITS) seq = -1;
  into.idMs[i] = ms;
  into.idSeq[i] = ms < 0 ? -1 : seq;
}
