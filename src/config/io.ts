// Where records come from and where rows and rejected records go: SOURCE, SINK, DEAD_LETTER.
import { compressionRefusal, type KafkaCompression } from '../kafka/compression.js';
import { TOPIC_NAME_RULE, validTopicName } from '../kafka/topics.js';
import type { Reader } from './reader.js';

export type SourceSpec = { kind: 'generator' } | { kind: 'file'; path: string } | { kind: 'stdin' } | { kind: 'kafka' } | { kind: 'redis' };
export type OutputCompression = KafkaCompression;
export type SinkSpec =
  | { kind: 'stdout' }
  | { kind: 'file'; path: string }
  | { kind: 'postgres'; url: string }
  | { kind: 'kafka'; topic: string; exactlyOnce: boolean; compression: OutputCompression };
export type DeadLetterSpec = { kind: 'file'; path: string; maxBytes: number; files: number } | { kind: 'stderr' } | { kind: 'kafka'; topic: string; compression: OutputCompression };

/** OUTPUT_COMPRESSION, if this runtime can produce it (zstd needs a recent Node). */
function outputCompression(r: Reader): OutputCompression {
  const c = r.get('OUTPUT_COMPRESSION');
  const refusal = compressionRefusal(c);
  if (refusal !== null) throw r.fail('OUTPUT_COMPRESSION', c, `${refusal} is allowed`);
  return c;
}

/** PATH of `file:PATH`, or null. */
function filePath(s: string): string | null {
  return s.startsWith('file:') && s.length > 5 ? s.slice(5) : null;
}

/** The topic an output to Kafka (`option`=kafka) writes to, checked. */
function outputTopic(r: Reader, name: 'OUTPUT_TOPIC' | 'DLQ_TOPIC', option: 'SINK' | 'DEAD_LETTER'): string {
  const topic = r.raw(name);
  if (!validTopicName(topic)) throw r.fail(name, topic, `${option}=kafka needs ${TOPIC_NAME_RULE}`);
  return topic;
}

export function parseSource(r: Reader): SourceSpec {
  const s = r.raw('SOURCE');
  const path = filePath(s);
  if (s === 'generator' || s === 'stdin' || s === 'kafka' || s === 'redis') return { kind: s };
  if (path !== null) return { kind: 'file', path };
  throw r.fail('SOURCE', s, 'generator, file:PATH, stdin or kafka or redis is allowed');
}

export function parseSink(r: Reader): SinkSpec {
  const s = r.raw('SINK');
  const path = filePath(s);
  if (s === 'stdout') return { kind: 'stdout' };
  if (path !== null) return { kind: 'file', path };
  if (s === 'kafka') {
    return { kind: 'kafka', topic: outputTopic(r, 'OUTPUT_TOPIC', 'SINK'), exactlyOnce: r.bool('EXACTLY_ONCE'), compression: outputCompression(r) };
  }
  if (/^postgres(ql)?:\/\/./.test(s)) {
    try {
      new URL(s);
    } catch {
      throw r.fail('SINK', s, 'a postgres://user:password@host:port/database URL (a password percent-encoded) is allowed');
    }
    return { kind: 'postgres', url: s };
  }
  throw r.fail('SINK', s, 'stdout, file:PATH, postgres://… or kafka is allowed');
}

export function parseDeadLetter(r: Reader): DeadLetterSpec {
  const s = r.raw('DEAD_LETTER');
  const path = filePath(s);
  if (s === 'stderr') return { kind: 'stderr' };
  if (path !== null) return { kind: 'file', path, maxBytes: r.get('DEAD_LETTER_MAX_BYTES'), files: r.get('DEAD_LETTER_FILES') };
  if (s === 'kafka') {
    return { kind: 'kafka', topic: outputTopic(r, 'DLQ_TOPIC', 'DEAD_LETTER'), compression: outputCompression(r) };
  }
  throw r.fail('DEAD_LETTER', s, 'file:PATH, stderr or kafka is allowed (rejected records are never dropped)');
}
