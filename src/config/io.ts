// Where records come from and where rows and rejected records go: SOURCE, SINK, DEAD_LETTER.
import { producibleCompressions, type KafkaCompression } from '../kafka/compression.js';
import { TOPIC_NAME } from './kafka.js';
import type { Reader } from './reader.js';

export type SourceSpec = { kind: 'generator' } | { kind: 'file'; path: string } | { kind: 'stdin' } | { kind: 'kafka' };
export type OutputCompression = KafkaCompression;
export type SinkSpec =
  | { kind: 'stdout' }
  | { kind: 'file'; path: string }
  | { kind: 'postgres'; url: string }
  | { kind: 'kafka'; topic: string; exactlyOnce: boolean; compression: OutputCompression };
export type DeadLetterSpec = { kind: 'file'; path: string } | { kind: 'stderr' } | { kind: 'kafka'; topic: string; compression: OutputCompression };

const TOPIC_CHARS = 'a topic name of letters, digits, ".", "_" and "-"';

export function parseSource(r: Reader): SourceSpec {
  const s = r.raw('SOURCE');
  if (s === 'generator' || s === 'stdin' || s === 'kafka') return { kind: s };
  if (s.startsWith('file:') && s.length > 5) return { kind: 'file', path: s.slice(5) };
  throw r.fail('SOURCE', s, 'generator, file:PATH, stdin or kafka is allowed');
}

export function parseSink(r: Reader): SinkSpec {
  const s = r.raw('SINK');
  if (s === 'stdout') return { kind: 'stdout' };
  if (s.startsWith('file:') && s.length > 5) return { kind: 'file', path: s.slice(5) };
  if (s === 'kafka') {
    const topic = r.raw('OUTPUT_TOPIC');
    if (!TOPIC_NAME.test(topic)) throw r.fail('OUTPUT_TOPIC', topic, `SINK=kafka needs ${TOPIC_CHARS}`);
    return { kind: 'kafka', topic, exactlyOnce: r.bool('EXACTLY_ONCE'), compression: r.oneOf('OUTPUT_COMPRESSION', producibleCompressions()) };
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
  if (s === 'stderr') return { kind: 'stderr' };
  if (s.startsWith('file:') && s.length > 5) return { kind: 'file', path: s.slice(5) };
  if (s === 'kafka') {
    const topic = r.raw('DLQ_TOPIC');
    if (!TOPIC_NAME.test(topic)) throw r.fail('DLQ_TOPIC', topic, `DEAD_LETTER=kafka needs ${TOPIC_CHARS}`);
    return { kind: 'kafka', topic, compression: r.oneOf('OUTPUT_COMPRESSION', producibleCompressions()) };
  }
  throw r.fail('DEAD_LETTER', s, 'file:PATH, stderr or kafka is allowed (rejected records are never dropped)');
}
