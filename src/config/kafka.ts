// The Kafka client's options (SOURCE=kafka, and the Kafka sink and dead letter): brokers, topics,
// group, TLS, SASL, timeouts and the intake bound.
import { readFileSync } from 'node:fs';
import { validTopicName } from '../kafka/topics.js';
import { list, type Reader } from './reader.js';

export interface KafkaConfig {
  brokers: string[];
  topics: string[];
  groupId: string;
  clientId: string;
  from: 'earliest' | 'latest';
  ssl: null | { ca?: string; cert?: string; key?: string; rejectUnauthorized: boolean };
  sasl: null | { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string };
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  maxWaitMs: number;
  maxBytesPerPartition: number;
  intakeMaxBytes: number;
  commitIntervalMs: number;
  idleFlushMs: number;
  lagIntervalMs: number;
  retryMaxMs: number;
}

function pemFile(r: Reader, name: 'KAFKA_SSL_CA' | 'KAFKA_SSL_CERT' | 'KAFKA_SSL_KEY'): string | undefined {
  const path = r.raw(name);
  if (path === '') return undefined;
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw r.fail(name, path, `a readable PEM file is required (${(err as Error).message})`);
  }
}

/** `required`: SOURCE=kafka, which needs topics. */
export function parseKafka(r: Reader, required: boolean): KafkaConfig {
  const brokersText = r.raw('KAFKA_BROKERS');
  const brokers = list(brokersText);
  if (brokers.length === 0 || brokers.some((b) => !/^[^\s:]+:\d{1,5}$/.test(b))) {
    throw r.fail('KAFKA_BROKERS', brokersText, 'a comma list of host:port is allowed');
  }
  const topicsText = r.raw('KAFKA_TOPICS');
  const topics = list(topicsText);
  if (required && topics.length === 0) throw r.fail('KAFKA_TOPICS', topicsText, 'SOURCE=kafka needs at least one topic');
  if (topics.some((t) => !validTopicName(t))) {
    throw r.fail('KAFKA_TOPICS', topicsText, 'topic names of letters, digits, ".", "_" and "-" (at most 249) are allowed');
  }
  const ssl = r.bool('KAFKA_SSL')
    ? { ca: pemFile(r, 'KAFKA_SSL_CA'), cert: pemFile(r, 'KAFKA_SSL_CERT'), key: pemFile(r, 'KAFKA_SSL_KEY'), rejectUnauthorized: r.bool('KAFKA_SSL_REJECT_UNAUTHORIZED') }
    : null;
  let sasl: KafkaConfig['sasl'] = null;
  if (r.raw('KAFKA_SASL_MECHANISM') !== '') {
    const mechanism = r.get('KAFKA_SASL_MECHANISM');
    const username = r.raw('KAFKA_SASL_USERNAME');
    if (username === '') throw r.fail('KAFKA_SASL_USERNAME', username, `KAFKA_SASL_MECHANISM=${mechanism} needs a user name`);
    sasl = { mechanism, username, password: r.raw('KAFKA_SASL_PASSWORD') };
  }
  const sessionTimeoutMs = r.get('KAFKA_SESSION_TIMEOUT_MS');
  const heartbeatIntervalMs = r.get('KAFKA_HEARTBEAT_INTERVAL_MS');
  if (heartbeatIntervalMs >= sessionTimeoutMs) {
    throw r.fail('KAFKA_HEARTBEAT_INTERVAL_MS', String(heartbeatIntervalMs), `must be lower than KAFKA_SESSION_TIMEOUT_MS (${sessionTimeoutMs})`);
  }
  return {
    brokers,
    topics,
    groupId: r.raw('KAFKA_GROUP_ID'),
    clientId: r.raw('KAFKA_CLIENT_ID'),
    from: r.get('KAFKA_FROM'),
    ssl,
    sasl,
    sessionTimeoutMs,
    heartbeatIntervalMs,
    maxWaitMs: r.get('KAFKA_MAX_WAIT_MS'),
    maxBytesPerPartition: r.get('KAFKA_MAX_BYTES_PER_PARTITION'),
    intakeMaxBytes: r.get('KAFKA_INTAKE_MAX_BYTES'),
    commitIntervalMs: r.get('COMMIT_INTERVAL_SECONDS') * 1000,
    idleFlushMs: r.get('IDLE_FLUSH_SECONDS') * 1000,
    lagIntervalMs: r.get('LAG_INTERVAL_SECONDS') * 1000,
    retryMaxMs: r.get('KAFKA_RETRY_MAX_SECONDS') * 1000,
  };
}
