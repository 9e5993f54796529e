// The one list of Kafka compression names: what the sinks and streamstats-produce can produce and what
// the config accepts. Pure (node:zlib only), so the config can import it without loading kafkajs or
// native codecs.
import zlib from 'node:zlib';

/** In the order of Kafka's record-batch codec ids (attributes bits 0-2): a name's index is its id. */
export const KAFKA_COMPRESSIONS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
export type KafkaCompression = (typeof KAFKA_COMPRESSIONS)[number];

/** The codec id kafkajs expects in send({ compression }) (kafkajs's CompressionTypes are these ids). */
export function compressionCode(c: KafkaCompression): number {
  return KAFKA_COMPRESSIONS.indexOf(c);
}

/** True when this Node can compress zstd (node:zlib has it from 22.15 / 23.8). */
export function zstdAvailable(): boolean {
  return typeof (zlib as unknown as { zstdCompress?: unknown }).zstdCompress === 'function';
}

/** What this runtime can produce; zstd is consumed on every version (fzstd). */
export function producibleCompressions(): readonly KafkaCompression[] {
  return zstdAvailable() ? KAFKA_COMPRESSIONS : KAFKA_COMPRESSIONS.filter((c) => c !== 'zstd');
}

/** Why `c` cannot be produced here, as "allowed" text for an error message; null when it can. */
export function compressionRefusal(c: string): string | null {
  if ((producibleCompressions() as readonly string[]).includes(c)) return null;
  const zstdNote = zstdAvailable() ? '' : ' (zstd needs Node >= 22.15; it is consumed on every version)';
  return `one of ${producibleCompressions().join(', ')}${zstdNote}`;
}
