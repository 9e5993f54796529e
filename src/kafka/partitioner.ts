// Java-compatible key partitioner: murmur2 (Kafka's Utils.murmur2) over the key bytes with 32-bit
// integer math, toPositive, modulo the partition count. A row key lands in the partition the Java
// client (and kafkajs's DefaultPartitioner) would choose, so other producers and Kafka Streams agree.
// kafkajs's own murmur2 runs on its 64-bit Long emulation: about 40 % of the main thread with rows
// keyed by identity, and worse than linear in the key length (keys of hundreds of KB froze the event
// loop for over a minute). This one is a single pass with Math.imul.
import type { ICustomPartitioner } from 'kafkajs';

const SEED = 0x9747b28c | 0;
const M = 0x5bd1e995;

/** Kafka's murmur2 of the bytes data[start, end), as the signed 32-bit int Java returns. */
export function murmur2(data: Uint8Array, start = 0, end = data.length): number {
  return murmur2View(new DataView(data.buffer, data.byteOffset, data.byteLength), start, end);
}

/**
 * murmur2 over the bytes [start, end) of a view. Words are read as little-endian 32-bit integers
 * through the DataView (unaligned reads are fine): 2.8x faster than assembling each word from four
 * byte loads (183 against 520 ns for a 400-byte row key), which was most of the sink's per-row time.
 * Callers that hash many keys of one buffer keep one view for all of them.
 */
export function murmur2View(data: DataView, start: number, end: number): number {
  const length = end - start;
  let h = SEED ^ length;
  const end4 = start + (length & ~3);
  for (let i = start; i < end4; i += 4) {
    let k = data.getInt32(i, true);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  // Java's switch falls through from 3 to 1; written out so the compiler's no-fallthrough check holds.
  const rest = length & 3;
  if (rest === 3) h ^= data.getUint8(end4 + 2) << 16;
  if (rest >= 2) h ^= data.getUint8(end4 + 1) << 8;
  if (rest >= 1) {
    h ^= data.getUint8(end4);
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** The partition Java's default partitioner picks for a keyed record. */
export function partitionForKey(key: Uint8Array | string, partitions: number): number {
  const bytes = typeof key === 'string' ? Buffer.from(key, 'utf8') : key;
  return (murmur2(bytes) & 0x7fffffff) % partitions;
}

let rr = 0;

/**
 * kafkajs createPartitioner: an explicit partition wins, a key is hashed as above over all partitions
 * (as Java does, so a key's partition does not move while a leader is away), no key goes round-robin.
 */
export const JavaCompatiblePartitioner: ICustomPartitioner = () => ({ partitionMetadata, message }) => {
  if (message.partition !== undefined && message.partition !== null) return message.partition;
  const n = partitionMetadata.length;
  if (message.key !== undefined && message.key !== null) return partitionForKey(message.key, n);
  rr = (rr + 1) & 0x7fffffff;
  return partitionMetadata[rr % n]!.partitionId;
};
