// Entries of one read -> pool batches, without parsing: each entry's REDIS_FIELD value is copied
// into a packed batch as it is (bytes), the rest sorted out here: entries already in the sink
// (below the stored position, acknowledged right away), entries without the field (dead-lettered
// with that reason), deleted entries (nothing to process), values over MAX_MESSAGE_BYTES (cut, and
// dead-lettered as too_large by the engine like Kafka's).
import { BatchBuilder, PackedKeys } from '../../core/batch.js';
import type { SourceBatch } from '../types.js';
import { idMs } from './position.js';
import { ENTRY, type XReadReader } from './wire.js';

export interface SplitOptions {
  readonly laneId: number;
  readonly batchSize: number;
  readonly batchMaxBytes: number;
  readonly maxMessageBytes: number;
  /** The position of each entry from `from` on (LanePositions.assign), in the order read. */
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

/**
 * The entries from..reader.count-1 of a read (wire.ts) -> batches. positions[k] is entry from + k's.
 * Positions travel as a Float64Array and ids as ranges of one buffer per batch (no string or Buffer
 * per entry: a dead letter makes the one it shows).
 */
export function splitEntries(reader: XReadReader, from: number, o: SplitOptions): Split {
  const out: Split = { batches: [], done: [], missing: [] };
  const n = reader.count;
  const ids = reader.ids;
  const state = reader.state;
  // Batch buffers are zero-filled shared memory, resident in full while a batch waits: size the first
  // to what the first batch can hold (its entries' REDIS_FIELD values, the only bytes copied in), not
  // to a fixed 1 MiB per read nor to the other fields' bytes.
  let estimate = 64;
  for (let i = from; i < n && i - from < o.batchSize && estimate < o.batchMaxBytes; i++) {
    if (state[i] === ENTRY.KEPT) estimate += reader.valueLen[i]!;
  }
  const builder = new BatchBuilder(Math.min(o.batchMaxBytes, estimate));
  let members: number[] = [];
  let oversized = new Map<number, { bytes: number }>();
  let first = 0;
  let firstMs = 0;
  let lastMs = 0;
  const cut = (endPosition: number) => {
    if (builder.count === 0) return;
    const { data, offsets } = builder.take();
    const positions = new Float64Array(members.length);
    let idBytes = 0;
    for (const i of members) idBytes += ids[i]!.length;
    const set = Buffer.allocUnsafe(idBytes);
    const at = new Int32Array(members.length);
    const len = new Int32Array(members.length);
    let p = 0;
    for (let k = 0; k < members.length; k++) {
      const i = members[k]!;
      positions[k] = o.positions[i - from]!;
      at[k] = p;
      len[k] = set.write(ids[i]!, p, 'latin1');
      p += len[k]!;
    }
    out.batches.push({
      lane: o.laneId,
      data,
      offsets,
      positions,
      keys: new PackedKeys(set, at, len),
      startPosition: first,
      endPosition,
      firstTimestampMs: firstMs,
      lastTimestampMs: lastMs,
      ...(oversized.size > 0 ? { oversized } : {}),
    });
    members = [];
    oversized = new Map();
  };
  for (let i = from; i < n; i++) {
    const pos = o.positions[i - from]!;
    const st = state[i];
    if (pos < o.skipBelow || st === ENTRY.DELETED) {
      out.done.push(ids[i]!);
      continue;
    }
    if (st === ENTRY.MISSING) {
      out.missing.push({ id: ids[i]!, position: pos, fieldNames: reader.names.get(i) ?? [] });
      continue;
    }
    // A batch ends at the next entry processed: entries sorted out in between lie inside it.
    if (builder.count > 0 && (builder.count >= o.batchSize || builder.bytes >= o.batchMaxBytes)) cut(pos);
    const ms = idMs(ids[i]!);
    if (builder.count === 0) {
      first = pos;
      firstMs = ms;
    }
    lastMs = ms;
    const size = reader.valueSize[i]!;
    // The reader kept MAX_MESSAGE_BYTES + 1 bytes at most: a longer value is cut and marked.
    if (size > o.maxMessageBytes) oversized.set(builder.count, { bytes: size });
    const at = reader.valueAt[i]!;
    builder.push(reader.data, at, at + Math.min(reader.valueLen[i]!, o.maxMessageBytes + 1));
    members.push(i);
  }
  const tail = n === from ? 0 : o.positions[n - 1 - from]! + 1;
  cut(tail);
  return out;
}
