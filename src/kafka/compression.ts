// The one list of Kafka compression names: what the sinks can produce and what the config accepts.
// Pure (node:zlib only), so the config can import it without loading kafkajs or native codecs.
import zlib from 'node:zlib';

export const KAFKA_COMPRESSIONS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
export type KafkaCompression = (typeof KAFKA_COMPRESSIONS)[number];

/** True when this Node can compress zstd (node:zlib has it from 22.15 / 23.8). */
export function zstdAvailable(): boolean {
  return typeof (zlib as unknown as { zstdCompress?: unknown }).zstdCompress === 'function';
}

/** What this runtime can produce; zstd is consumed on every version (fzstd). */
export function producibleCompressions(): readonly KafkaCompression[] {
  return zstdAvailable() ? KAFKA_COMPRESSIONS : KAFKA_COMPRESSIONS.filter((c) => c !== 'zstd');
}
