// One kafkajs fetch cut into pool-sized batches. Each batch carries its records' positions (for
// commits and dead letters) and keys; values too long to decode are cut, stand-ins for records a
// decompression bound refused are kept as empty messages with their reason, so every record is either
// decoded or dead-lettered and a commit never skips one silently.
import type { KafkaMessage } from 'kafkajs';
import { BatchBuilder } from '../../core/batch.js';
import { REFUSED_HEADER, REFUSED_RECORD_ATTRIBUTE } from '../../kafka/codecs.js';
import type { SourceBatch } from '../types.js';

export interface FetchCutOptions {
  /** Messages per batch handed to the pool. */
  readonly batchSize: number;
  /** Bytes per batch handed to the pool. */
  readonly batchMaxBytes: number;
  /** MAX_MESSAGE_BYTES: longer values are copied cut to this + 1 bytes (enough to reject them as too_large). */
  readonly maxMessageBytes?: number;
}

/** The part of a kafkajs Batch this reads. */
export interface Fetched {
  readonly messages: readonly KafkaMessage[];
  lastOffset(): string;
}

export function cutFetch(partition: number, fetched: Fetched, o: FetchCutOptions): SourceBatch[] {
  const out: SourceBatch[] = [];
  const msgs = fetched.messages;
  if (msgs.length === 0) return out;
  const maxMessageBytes = o.maxMessageBytes ?? Infinity;
  // The batch buffers are shared memory that the allocator zero-fills, so every byte of capacity is
  // resident while the batch waits in the intake queue (which counts message bytes, not capacity):
  // size the first buffer to what the first batch holds, not to a fixed 1 MiB (100-message batches
  // held 1 MiB each and the overload test's RSS grew by ~150 MiB).
  let first = 0;
  for (let i = 0; i < msgs.length && i < o.batchSize && first < o.batchMaxBytes; i++) first += Math.min(msgs[i]!.value?.length ?? 0, maxMessageBytes + 1);
  const builder = new BatchBuilder(Math.min(o.batchMaxBytes, first + 64));
  let positions: string[] = [];
  let keys: Array<Buffer | null> = [];
  let oversized = new Map<number, { bytes: number; detail?: string }>();
  let refusal: string | null = null;
  let firstTs = 0;
  let lastTs = 0;
  const cut = (endPosition: number) => {
    const { data, offsets } = builder.take();
    out.push({
      partition,
      data,
      offsets,
      positions,
      keys,
      startPosition: Number(positions[0]),
      endPosition,
      firstTimestampMs: firstTs,
      lastTimestampMs: lastTs,
      ...(oversized.size > 0 ? { oversized } : {}),
    });
    positions = [];
    keys = [];
    oversized = new Map();
  };
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i]!;
    // Only a batch's first and last timestamps are kept: parse no other.
    if (builder.count === 0) firstTs = Number(m.timestamp);
    const attributes = (m as { attributes?: number }).attributes;
    if (attributes === REFUSED_RECORD_ATTRIBUTE && m.value !== null && m.value.length === 0) {
      // A stand-in for a record of a compressed batch refused by the decompression bound.
      const h = m.headers?.[REFUSED_HEADER];
      if (h !== undefined) refusal = String(h);
      oversized.set(builder.count, { bytes: -1, detail: refusal ?? 'compressed record batch over the decompression bound: refused' });
      builder.push(Buffer.alloc(0));
    } else if (m.value !== null && m.value.length > maxMessageBytes) {
      // Only what the decoder needs to reject it as too_large (and the dead letter keeps) is copied.
      oversized.set(builder.count, { bytes: m.value.length });
      builder.push(m.value.subarray(0, maxMessageBytes + 1));
    } else {
      // A null value (tombstone) becomes an empty message: dead-lettered as empty_message, not dropped.
      builder.push(m.value ?? Buffer.alloc(0));
    }
    positions.push(m.offset);
    keys.push(m.key ?? null);
    if (i === msgs.length - 1) {
      lastTs = Number(m.timestamp);
      cut(Number(fetched.lastOffset()) + 1);
    } else if (builder.count >= o.batchSize || builder.bytes >= o.batchMaxBytes) {
      lastTs = Number(m.timestamp);
      cut(Number(msgs[i + 1]!.offset));
    }
  }
  return out;
}
