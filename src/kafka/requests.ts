// Cutting produce requests: each partition's share of a request is one record batch, which the
// topic's max.message.bytes bounds, so sends are cut per partition by key and value bytes.
import type { IHeaders, Message } from 'kafkajs';

/** Bytes a record costs beyond its key and value (record + batch headers, generously). */
export const RECORD_OVERHEAD_BYTES = 128;

/** Splits messages into sends of at most maxBytes of keys, values and headers (a single larger message goes alone). */
export function chunkMessages(messages: readonly Message[], maxBytes: number, recordOverhead = 0): Message[][] {
  return chunkItems(messages.map((m) => ({ m })), maxBytes, recordOverhead).map((c) => c.map((x) => x.m));
}

/**
 * Splits items (each carrying its message, and its bytes when already counted) into sends holding at
 * most maxBytes per partition (messages without a partition count against one shared budget): keys,
 * values, headers and recordOverhead bytes per record. maxBytes must not exceed the topic's
 * max.message.bytes. A single larger message goes alone.
 */
export function chunkItems<T extends { readonly m: Message; readonly size?: number }>(items: readonly T[], maxBytes: number, recordOverhead = 0): T[][] {
  const out: T[][] = [];
  let cur: T[] = [];
  const bytes = new Map<number, number>();
  for (const x of items) {
    const size = (x.size ?? messageBytes(x.m)) + recordOverhead;
    const p = x.m.partition ?? -1;
    const used = bytes.get(p) ?? 0;
    if (cur.length > 0 && used > 0 && used + size > maxBytes) {
      out.push(cur);
      cur = [];
      bytes.clear();
    }
    cur.push(x);
    bytes.set(p, (bytes.get(p) ?? 0) + size);
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** The request budget per partition: the configured one, within the topic's record-batch limit. */
export function requestBudget(maxRequestBytes: number, maxMessageBytes: number): number {
  return Math.min(maxRequestBytes, maxMessageBytes - RECORD_OVERHEAD_BYTES);
}

/** Key, value and header bytes of a message (a header also costs its name and 8 bytes of framing). */
export function messageBytes(m: Message): number {
  return byteLength(m.key) + byteLength(m.value) + headerBytes(m.headers);
}

function headerBytes(h: IHeaders | undefined): number {
  let n = 0;
  for (const [k, v] of Object.entries(h ?? {})) n += Buffer.byteLength(k) + (typeof v === 'string' ? Buffer.byteLength(v) : Buffer.isBuffer(v) ? v.length : 0) + 8;
  return n;
}

function byteLength(v: Buffer | string | null | undefined): number {
  if (v === null || v === undefined) return 0;
  return typeof v === 'string' ? Buffer.byteLength(v) : v.length;
}
