// Entries of one read -> pool batches, without parsing: the batches are views of the reader's buffer
// of kept REDIS_FIELD values (wire.ts), which is shared memory, so a value's bytes are not copied
// again here. The rest is sorted out: entries already in the sink (below the stored position,
// acknowledged right away), entries without the field (dead-lettered with that reason), deleted
// entries (nothing to process), values over MAX_MESSAGE_BYTES (cut, and dead-lettered as too_large
// by the engine like Kafka's).
import { PackedKeys } from '../../core/batch.js';
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
 * A batch's bytes are a view of reader.data (the caller hands that buffer on with reader.take() when
 * there are batches); its values lie back to back there, since the reader keeps nothing between two
 * kept values. Positions travel as a Float64Array and ids as ranges of one buffer per batch (no string
 * or Buffer per entry: a dead letter makes the one it shows).
 */
export function splitEntries(reader: XReadReader, from: number, o: SplitOptions): Split {
  const out: Split = { batches: [], done: [], missing: [] };
  const n = reader.count;
  const { ids, state, valueAt, valueLen, valueSize, data } = reader;
  const keep = o.maxMessageBytes + 1;
  let members: number[] = [];
  let oversized = new Map<number, { bytes: number }>();
  let first = 0;
  let firstMs = 0;
  let lastMs = 0;
  // The batch's values are data[start, end).
  let start = 0;
  let end = 0;
  const cut = (endPosition: number) => {
    const count = members.length;
    if (count === 0) return;
    const offsets = new Uint32Array(count + 1);
    const positions = new Float64Array(count);
    let idBytes = 0;
    for (const i of members) idBytes += ids[i]!.length;
    const set = Buffer.allocUnsafe(idBytes);
    const at = new Int32Array(count);
    const len = new Int32Array(count);
    let p = 0;
    for (let k = 0; k < count; k++) {
      const i = members[k]!;
      offsets[k] = valueAt[i]! - start;
      positions[k] = o.positions[i - from]!;
      at[k] = p;
      len[k] = set.write(ids[i]!, p, 'latin1');
      p += len[k]!;
    }
    offsets[count] = end - start;
    out.batches.push({
      lane: o.laneId,
      data: Buffer.from(data.buffer, data.byteOffset + start, end - start),
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
    const at = valueAt[i]!;
    // A batch ends at the next entry processed: entries sorted out in between lie inside it. It ends
    // early where the values stop being adjacent (a value cut below what the reader kept).
    if (members.length > 0 && (members.length >= o.batchSize || end - start >= o.batchMaxBytes || at !== end)) cut(pos);
    const ms = reader.idMs[i]! >= 0 ? reader.idMs[i]! : idMs(ids[i]!);
    if (members.length === 0) {
      first = pos;
      firstMs = ms;
      start = at;
    }
    lastMs = ms;
    // The reader kept MAX_MESSAGE_BYTES + 1 bytes at most: a longer value is cut and marked.
    if (valueSize[i]! > o.maxMessageBytes) oversized.set(members.length, { bytes: valueSize[i]! });
    end = at + Math.min(valueLen[i]!, keep);
    members.push(i);
  }
  const tail = n === from ? 0 : o.positions[n - 1 - from]! + 1;
  cut(tail);
  return out;
}
