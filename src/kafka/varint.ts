// Kafka's zigzag varints, and the size of a record as the statistics sink writes it. Pure, with no
// imports: the lane owners write records with it (src/sinks/kafka/row-records.ts), the main thread's
// encoder too (./record-batch.ts).

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

/**
 * The exact bytes appendRange() writes for the record at offsetDelta of a batch, with kn key bytes
 * (-1: null), vn value bytes and timestamp delta 0: what lets a request be laid out before it is written.
 */
export function rangeRecordBytes(kn: number, vn: number, offsetDelta: number): number {
  const body = 1 + 1 + varintBytes(offsetDelta) + varintBytes(kn) + Math.max(kn, 0) + varintBytes(vn) + vn + 1;
  return varintBytes(body) + body;
}

