// Kafka's zigzag varints, and a record without headers as the statistics sink writes it: its size
// and its bytes. Pure, with no imports: the lane owners write records with it
// (src/sinks/kafka/row-records.ts), the main thread's encoder too (./record-batch.ts), so both write
// the same bytes.

/** Bytes of x as a zigzag varint (x a 32-bit integer). */
export function varintBytes(x: number): number {
  let v = ((x << 1) ^ (x >> 31)) >>> 0;
  let n = 1;
  while (v >= 0x80) {
    v >>>= 7;
    n++;
  }
  return n;
}

/** Bytes of x as a zigzag varlong (x a safe integer). */
export function varlongBytes(x: number): number {
  let v = x >= 0 ? x * 2 : -x * 2 - 1;
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

export function putVarint(b: Uint8Array, o: number, x: number): number {
  let v = ((x << 1) ^ (x >> 31)) >>> 0;
  while (v >= 0x80) {
    b[o++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  b[o++] = v;
  return o;
}

export function putVarlong(b: Uint8Array, o: number, x: number): number {
  if (x >= -0x40000000 && x < 0x40000000) return putVarint(b, o, x);
  let v = x >= 0 ? x * 2 : -x * 2 - 1;
  while (v >= 0x80) {
    b[o++] = (v % 128) | 0x80;
    v = Math.floor(v / 128);
  }
  b[o++] = v;
  return o;
}

/** Copies src[s, e) to b at o: short runs in JavaScript (a native copy's call costs more than a few bytes). */
export function putRange(b: Buffer, o: number, src: Buffer, s: number, e: number): number {
  const n = e - s;
  if (n <= 16) {
    for (let j = 0; j < n; j++) b[o + j] = src[s + j]!;
  } else {
    src.copy(b, o, s, e);
  }
  return o + n;
}

/** A record's body bytes (after its length) with kn key bytes (-1: null), vn value bytes and no headers. */
export function rangeRecordBody(kn: number, vn: number, offsetDelta: number, timestampDelta = 0): number {
  return 1 + varlongBytes(timestampDelta) + varintBytes(offsetDelta) + varintBytes(kn) + Math.max(kn, 0) + varintBytes(vn) + vn + 1;
}

/**
 * The exact bytes appendRange() writes for the record at offsetDelta of a batch, with kn key bytes
 * (-1: null), vn value bytes and timestamp delta 0: what lets a request be laid out before it is written.
 */
export function rangeRecordBytes(kn: number, vn: number, offsetDelta: number): number {
  const body = rangeRecordBody(kn, vn, offsetDelta);
  return varintBytes(body) + body;
}

/** A record's head at o: its length (`body`), attributes 0, timestamp and offset deltas; returns the end. */
export function putRecordHead(b: Uint8Array, o: number, body: number, timestampDelta: number, offsetDelta: number): number {
  o = putVarint(b, o, body);
  b[o++] = 0;
  o = putVarlong(b, o, timestampDelta);
  return putVarint(b, o, offsetDelta);
}

/**
 * The record of key[ks, ke) (null: a null key) and value[vs, ve), without headers, at o (`body` from
 * rangeRecordBody); returns its end. The value is its last bytes but one (the header count, 0).
 */
export function putRangeRecord(b: Buffer, o: number, body: number, key: Buffer | null, ks: number, ke: number, value: Buffer, vs: number, ve: number, offsetDelta: number, timestampDelta = 0): number {
  const kn = key === null ? -1 : ke - ks;
  o = putRecordHead(b, o, body, timestampDelta, offsetDelta);
  o = putVarint(b, o, kn);
  if (kn > 0) o = putRange(b, o, key!, ks, ke);
  o = putVarint(b, o, ve - vs);
  o = putRange(b, o, value, vs, ve);
  b[o++] = 0;
  return o;
}
