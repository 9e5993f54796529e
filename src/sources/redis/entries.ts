// Entries of one read -> pool batches, without parsing: each entry's REDIS_FIELD value is copied
// into a packed batch as it is (bytes), the rest sorted out here: entries already in the sink
// (below the stored position, acknowledged right away), entries without the field (dead-lettered
// with that reason), deleted entries (nothing to process), values over MAX_MESSAGE_BYTES (cut, and
// dead-lettered as too_large by the engine like Kafka's).
import { BatchBuilder } from '../../core/batch.js';
import type { SourceBatch } from '../types.js';
import type { StreamEntry } from './client.js';
import { idMs } from './position.js';

export interface SplitOptions {
  readonly laneId: number;
  readonly field: Buffer;
  readonly batchSize: number;
  readonly batchMaxBytes: number;
  readonly maxMessageBytes: number;
  /** The position of each entry (LanePositions.assign), in the order read. */
  readonly positions: readonly number[];
  /** Positions below this are in the sink already (restored lane): acknowledged, not processed. */
  readonly skipBelow: number;
}

export interface Missing {
  readonly id: string;
  readonly position: number;
  readonly fieldNames: readonly string[];
}

export interface Split {
  readonly batches: SourceBatch[];
  /** Ids acknowledged without processing: below the stored position, or deleted from the stream. */
  readonly done: string[];
  readonly missing: Missing[];
}

export function splitEntries(entries: readonly StreamEntry[], o: SplitOptions): Split {
  const out: Split = { batches: [], done: [], missing: [] };
  // Batch buffers are zero-filled shared memory, resident in full while a batch waits: size the first
  // to what the first batch can hold (its entries' REDIS_FIELD values, the only bytes copied in), not
  // to a fixed 1 MiB per read nor to the other fields' bytes.
  let estimate = 64;
  for (let i = 0; i < entries.length && i < o.batchSize && estimate < o.batchMaxBytes; i++) {
    const f = entries[i]!.fields;
    estimate += f === null ? 0 : Math.min(fieldValue(f, o.field)?.length ?? 0, o.maxMessageBytes + 1);
  }
  const builder = new BatchBuilder(Math.min(o.batchMaxBytes, estimate));
  let positions: string[] = [];
  let keys: Buffer[] = [];
  let oversized = new Map<number, { bytes: number }>();
  let first = 0;
  let firstMs = 0;
  let lastMs = 0;
  const cut = (endPosition: number) => {
    if (builder.count === 0) return;
    const { data, offsets } = builder.take();
    out.batches.push({
      lane: o.laneId,
      data,
      offsets,
      positions,
      keys,
      startPosition: first,
      endPosition,
      firstTimestampMs: firstMs,
      lastTimestampMs: lastMs,
      ...(oversized.size > 0 ? { oversized } : {}),
    });
    positions = [];
    keys = [];
    oversized = new Map();
  };
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    const pos = o.positions[i]!;
    if (pos < o.skipBelow || e.fields === null) {
      out.done.push(e.id);
      continue;
    }
    const value = fieldValue(e.fields, o.field);
    if (value === null) {
      out.missing.push({ id: e.id, position: pos, fieldNames: names(e.fields) });
      continue;
    }
    // A batch ends at the next entry processed: entries sorted out in between lie inside it.
    if (builder.count > 0 && (builder.count >= o.batchSize || builder.bytes >= o.batchMaxBytes)) cut(pos);
    const ms = idMs(e.id);
    if (builder.count === 0) {
      first = pos;
      firstMs = ms;
    }
    lastMs = ms;
    if (value.length > o.maxMessageBytes) {
      oversized.set(builder.count, { bytes: value.length });
      builder.push(value, 0, o.maxMessageBytes + 1);
    } else {
      builder.push(value);
    }
    positions.push(String(pos));
    keys.push(Buffer.from(e.id));
  }
  const tail = entries.length === 0 ? 0 : o.positions[entries.length - 1]! + 1;
  cut(tail);
  return out;
}

function fieldValue(fields: readonly Buffer[], field: Buffer): Buffer | null {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i]!.equals(field)) return fields[i + 1]!;
  return null;
}

function names(fields: readonly Buffer[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < fields.length && out.length < 10; i += 2) out.push(JSON.stringify(fields[i]!.toString('utf8').slice(0, 64)));
  return out;
}
