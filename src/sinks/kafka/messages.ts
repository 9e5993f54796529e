// Rows as Kafka messages: keyed by the row's identity, so a compacted topic keeps the latest row per
// window and the Java-compatible murmur2 partitioner keeps one identity in one partition.
import type { Message } from 'kafkajs';
import { partitionForKey } from '../../kafka/partitioner.js';
import { RECORD_OVERHEAD_BYTES } from '../../kafka/requests.js';
import type { TopicLimits } from '../../kafka/topics.js';
import type { RowBatch, StatsRow } from '../../windows/row.js';
import type { RowRejection } from '../types.js';

/**
 * The message key of a row: JSON of [topic, partition, name, groupby pairs sorted by name, period_start],
 * with topic and partition null for an unpartitioned source. Example:
 * `["metrics",3,"cpu.idle_perc",[["hostname","h1"],["service","monitoring"]],"2020-02-11T12:42:00.000Z"]`.
 * The unit is not part of it (as in the PostgreSQL sink's upsert key): two series that differ only
 * in unit share a key.
 */
export function rowIdentityKey(r: StatsRow): string {
  const g = Object.keys(r.groupby).sort().map((k) => [k, r.groupby[k] ?? null]);
  return JSON.stringify([r.topic ?? null, r.partition ?? null, r.name, g, r.period_start]);
}

/** A batch's rows as messages, with what the lanes need to cut requests and report refusals. */
export interface EncodedRows {
  readonly messages: Message[];
  /** rowIndex[i] = index in the batch of messages[i]; sizes[i] = its key and value bytes. */
  readonly rowIndex: number[];
  readonly sizes: number[];
  readonly bytes: number;
  /** Rows over the topic's max.message.bytes: never sent. */
  readonly rejected: RowRejection[];
}

export function encodeRows(batch: RowBatch, topic: string, limits: TopicLimits): EncodedRows {
  const messages: Message[] = [];
  const rowIndex: number[] = [];
  const sizes: number[] = [];
  const rejected: RowRejection[] = [];
  let bytes = 0;
  const max = limits.maxMessageBytes;
  const partitions = limits.partitions;
  for (let i = 0; i < batch.rows.length; i++) {
    const r = batch.rows[i]!;
    // Encoded once: its bytes are hashed for the partition, counted for the limits and sent as they are.
    const key = Buffer.from(batch.identityKey?.(i) ?? rowIdentityKey(r), 'utf8');
    const value = batch.json?.(i) ?? JSON.stringify(r);
    const size = key.length + Buffer.byteLength(value);
    if (size + RECORD_OVERHEAD_BYTES > max) {
      rejected.push({ index: i, detail: `kafka: row of ${size} bytes (key and value) is over max.message.bytes=${max} of topic ${topic}` });
      continue;
    }
    // The partition the Java-compatible partitioner would pick, set here so requests can be cut per partition.
    messages.push(partitions > 0 ? { key, value, partition: partitionForKey(key, partitions) } : { key, value });
    rowIndex.push(i);
    sizes.push(size);
    bytes += size;
  }
  return { messages, rowIndex, sizes, bytes, rejected };
}
