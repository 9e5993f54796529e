// What a kafkajs producer error means for us, read along the cause chain (kafkajs wraps broker errors
// in retry and request errors: `cause` or `originalError`).

interface ErrorLike {
  readonly type?: unknown;
  readonly code?: unknown;
  readonly cause?: unknown;
  readonly originalError?: unknown;
}

/** The first error in the cause chain (at most 8 deep) that `test` accepts, or null. */
function inCauses(err: unknown, test: (e: ErrorLike) => boolean): ErrorLike | null {
  for (let e: unknown = err, depth = 0; e !== null && typeof e === 'object' && depth < 8; depth++) {
    const x = e as ErrorLike;
    if (test(x)) return x;
    e = x.cause ?? x.originalError;
  }
  return null;
}

const FENCING_TYPES = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED', 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED']);

/** True when a newer producer with the same transactionalId took over. */
export function isFencingError(err: unknown): boolean {
  return inCauses(err, (x) => (typeof x.type === 'string' && FENCING_TYPES.has(x.type)) || x.code === 47 || x.code === 90) !== null;
}

const ROW_LEVEL_TYPES = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD']);

/** A refusal of the records themselves, not of the producer or the connection: its name, else null. */
export function rowLevelRefusal(err: unknown): string | null {
  const x = inCauses(err, (x) => (typeof x.type === 'string' && ROW_LEVEL_TYPES.has(x.type)) || x.code === 10 || x.code === 18 || x.code === 87);
  if (x === null) return null;
  return typeof x.type === 'string' ? x.type : `error code ${String(x.code)}`;
}

/** The coordinator is still completing the previous transaction (retriable; the request changed nothing). */
export function isConcurrentTransactions(err: unknown): boolean {
  const x = err as ErrorLike | null;
  return x !== null && typeof x === 'object' && (x.type === 'CONCURRENT_TRANSACTIONS' || x.code === 51);
}

/**
 * A hint for a session that never reached a broker's Kafka protocol: the address took the TCP
 * connection, then closed it or never answered ApiVersions (the first request of every connection).
 * That is what another service on the port does (PostgreSQL closes, Redis stays silent), or a TLS
 * listener spoken to in plain text and the other way round. Null for anything else, such as a refused
 * connection (nothing listening: the ordinary outage) or a broker's own error.
 */
export function notKafkaHint(err: unknown, brokers: readonly string[], ssl: boolean): string | null {
  // A reset on read, unlike a refused connect, means the connection had been taken.
  const closed = inCauses(err, (x) => (x as { name?: unknown }).name === 'KafkaJSConnectionClosedError' || /^Closed connection|read ECONNRESET/.test(String((x as { message?: unknown }).message ?? '')));
  const silent = inCauses(err, (x) => /Request ApiVersions\(.*\) timed out/.test(String((x as { message?: unknown }).message ?? '')));
  if (closed === null && silent === null) return null;
  const what = closed !== null ? 'closed the connection' : 'did not answer';
  return `${brokers.join(',')} accepted a connection but ${what} before any Kafka answer: KAFKA_BROKERS may name another service's port rather than a Kafka listener, ` +
    (ssl ? 'or a plaintext listener (KAFKA_SSL=true speaks TLS)' : 'or a TLS listener (set KAFKA_SSL=true)');
}
