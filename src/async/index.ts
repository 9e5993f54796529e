// The one small async toolkit every backpressure point and retry loop uses: a bounded gate (a
// counting semaphore whose waiters are woken in order), a timeout that always clears its timer, a
// cancellable sleep, and a retry that honours the errors' own `canRetry` flag.

/**
 * A counting gate of `limit` slots. `acquire()` resolves once a slot is free; `release()` frees one
 * and wakes the oldest waiter. `idle()` resolves when no slot is held. Waiters are in a plain FIFO:
 * at most one per caller that awaits, so the list is bounded by the callers, not by the data.
 */
export class Gate {
  #limit: number;
  #held = 0;
  readonly #waiters: Array<() => void> = [];
  readonly #idle: Array<() => void> = [];

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`Gate: limit must be an integer >= 1, got ${limit}`);
    this.#limit = limit;
  }

  get held(): number {
    return this.#held;
  }

  get limit(): number {
    return this.#limit;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /** True when acquire() would resolve at once. */
  get free(): boolean {
    return this.#held < this.#limit && this.#waiters.length === 0;
  }

  /** Takes a slot if one is free now, without waiting. */
  tryAcquire(): boolean {
    if (!this.free) return false;
    this.#held++;
    return true;
  }

  acquire(): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    return new Promise<void>((resolve) =>
      this.#waiters.push(() => {
        this.#held++;
        resolve();
      }),
    );
  }

  release(): void {
    if (this.#held === 0) throw new Error('Gate: release() without a held slot');
    this.#held--;
    this.#wake();
    if (this.#held === 0 && this.#waiters.length === 0) for (const w of this.#idle.splice(0)) w();
  }

  /** Resolves when nothing holds a slot (a drain point for shutdown). */
  idle(): Promise<void> {
    if (this.#held === 0 && this.#waiters.length === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  /** Changes the number of slots (e.g. after a rebalance); waiters are woken as slots free up. */
  resize(limit: number): void {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`Gate: limit must be an integer >= 1, got ${limit}`);
    this.#limit = limit;
    this.#wake();
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  #wake(): void {
    while (this.#held < this.#limit && this.#waiters.length > 0) this.#waiters.shift()!();
  }
}

/**
 * A one-shot signal: waiters resolve when it is raised (stop requested, partition revoked). Cheaper
 * than an AbortController where only "has it happened, and wait for it" is needed.
 */
export class Signal {
  #raised = false;
  readonly #waiters: Array<() => void> = [];

  get raised(): boolean {
    return this.#raised;
  }

  raise(): void {
    if (this.#raised) return;
    this.#raised = true;
    for (const w of this.#waiters.splice(0)) w();
  }

  wait(): Promise<void> {
    if (this.#raised) return Promise.resolve();
    return new Promise<void>((resolve) => this.#waiters.push(resolve));
  }
}

export class TimeoutError extends Error {
  readonly code = 'STREAMSTATS_TIMEOUT';
  constructor(readonly what: string, readonly ms: number) {
    super(`${what} timed out after ${ms} ms`);
    this.name = 'TimeoutError';
  }
}

/** Races `p` against a timer that is always cleared; rejects with a TimeoutError naming `what`. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(what, ms)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** Sleeps `ms`, or less when `signal` is raised first (the timer is cleared then). */
export function sleep(ms: number, signal?: Signal): Promise<void> {
  if (ms <= 0 || signal?.raised === true) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    void signal?.wait().then(() => {
      clearTimeout(t);
      resolve();
    });
  });
}

export interface RetryOptions {
  /** Attempts in all, the first included (>= 1); Infinity = until success or a non-retriable error. */
  readonly attempts: number;
  /** Back-off before retry n (1-based): min(maxDelayMs, baseDelayMs * 2^(n-1)), jittered by 0.5..1. */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Whether this error can be retried; default: the error's own `canRetry` flag (absent = true). */
  readonly retriable?: (err: unknown) => boolean;
  /** Called before each back-off, e.g. to log the attempt. */
  readonly onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
  /** Stops the retrying (the last error is thrown) once raised. */
  readonly signal?: Signal;
  /** Jitter source (tests pass a constant). */
  readonly random?: () => number;
}

/** The error's own verdict: StreamstatsError.canRetry, or true for errors that do not say. */
export function canRetry(err: unknown): boolean {
  if (typeof err === 'object' && err !== null && 'canRetry' in err) return (err as { canRetry: unknown }).canRetry !== false;
  return true;
}

export function backoffMs(attempt: number, o: Pick<RetryOptions, 'baseDelayMs' | 'maxDelayMs' | 'random'>): number {
  const raw = Math.min(o.maxDelayMs, o.baseDelayMs * 2 ** Math.min(attempt - 1, 30));
  return raw * (0.5 + (o.random ?? Math.random)() / 2);
}

/** Runs `fn` until it resolves, the error is not retriable, the attempts are used up, or the signal is raised. */
export async function retry<T>(fn: (attempt: number) => Promise<T>, o: RetryOptions): Promise<T> {
  if (!(o.attempts >= 1)) throw new RangeError(`retry: attempts must be >= 1, got ${o.attempts}`);
  const retriable = o.retriable ?? canRetry;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (attempt >= o.attempts || !retriable(err) || o.signal?.raised === true) throw err;
      const delay = backoffMs(attempt, o);
      o.onRetry?.(err, attempt, delay);
      await sleep(delay, o.signal);
      // Raised during the back-off (the compiler cannot see that the await may change it).
      if ((o.signal as Signal | undefined)?.raised === true) throw err;
    }
  }
}
