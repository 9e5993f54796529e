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
