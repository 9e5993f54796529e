// The decode pool: packs a batch into one transferable buffer, dispatches it to a piscina worker
// (or decodes in-thread when threads = 0), retries a failed batch once, then reports it poisoned.
// In-flight batches are bounded: acquire() waits, which is the backpressure the source feels.
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { Decoder } from '../core/decode.js';
import { movableOffsets, type Batch } from '../core/batch.js';
import type { DecodeResult, DecodeTask, DecoderSettings, RowsTask, RowsWire, WireResult } from '../core/messages.js';
import { SeriesDictionaries } from './dictionary.js';
import { KeyArena, keyArenaBytes } from '../core/key-arena.js';
import { StreamstatsError } from '../errors.js';
import { Gate, TimeoutError, withTimeout } from '../async/index.js';
import { WORKER_YOUNG_GENERATION_MB } from '../config/memory.js';

function closedError(): StreamstatsError {
  return new StreamstatsError('STREAMSTATS_POOL_CLOSED', 'the decode pool is closed');
}

export interface PoolOptions {
  readonly threads: number;
  /** Batches in flight (queued + running) at most. */
  readonly maxInFlight: number;
  readonly settings: DecoderSettings;
  readonly workerMaxMemoryMb: number;
  /** A batch not done after this long is aborted (its worker is replaced) and counts as a failure. */
  readonly taskTimeoutMs: number;
  /** Errors piscina reports outside any task (e.g. a worker that could not start). */
  readonly onPoolError?: (err: Error) => void;
  /** Worker entry; the default is the compiled workers/decode.js. */
  readonly workerFile?: string;
  /** Called after each attempt that failed, with whether it will be retried. */
  readonly onFailure?: (err: Error, willRetry: boolean) => void;
}

export const POOL_DEFAULTS = {
  workerFile: fileURLToPath(new URL('../../workers/decode.js', import.meta.url)),
} as const;

export type BatchOutcome =
  | { readonly kind: 'ok'; readonly result: DecodeResult; readonly waitSeconds: number; readonly runSeconds: number }
  | { readonly kind: 'poisoned'; readonly reason: string };

export interface PoolStats {
  readonly threads: number;
  readonly inFlight: number;
  readonly maxInFlight: number;
  readonly queued: number;
  /** 0..1, share of worker time spent running tasks (piscina's own measure); 0 in-thread. */
  readonly utilization: number;
}

export function pack(batch: Pick<Batch, 'data' | 'offsets' | 'ends'>): DecodeTask {
  const data = batch.data;
  // A batch the source built in shared memory (BatchBuilder) is read by the worker in place: nobody
  // writes to it once taken, and the main thread keeps the same bytes for dead letters and retries.
  if (data.buffer instanceof SharedArrayBuffer) return { kind: 'decode', buffer: data.buffer, ...movableOffsets(batch, true) };
  // Otherwise one copy into a fresh ArrayBuffer that can be moved to the worker; the batch's own bytes
  // stay here so a crashed worker loses nothing.
  const buffer = new ArrayBuffer(data.length);
  new Uint8Array(buffer).set(data);
  return { kind: 'decode', buffer, ...movableOffsets(batch, false) };
}

function transferList(task: DecodeTask): ArrayBuffer[] {
  const moved = [task.offsets.buffer as ArrayBuffer];
  if (task.ends !== undefined) moved.push(task.ends.buffer as ArrayBuffer);
  if (!(task.buffer instanceof SharedArrayBuffer)) moved.push(task.buffer);
  return moved;
}

export class DecodePool {
  readonly #opts: PoolOptions;
  readonly #piscina: Piscina | null;
  readonly #inline: Decoder | null;
  readonly #dictionaries: SeriesDictionaries;
  /** Batches in flight: the bound the source feels as backpressure. */
  readonly #gate: Gate;
  /** Row chunks being formatted in workers: each holds a chunk's rows until the sink takes them. */
  readonly #rowsGate: Gate;
  #rowsFailed = false;
  #keyArena: KeyArena | null = null;
  #busySeconds = 0;
  #closed = false;
  #closing: Promise<void> | null = null;

  constructor(opts: PoolOptions) {
    if (!Number.isInteger(opts.threads) || opts.threads < 0) {
      throw new RangeError(`threads (${opts.threads}) must be an integer >= 0`);
    }
    if (!Number.isInteger(opts.maxInFlight) || opts.maxInFlight < 1) {
      throw new RangeError(`maxInFlight (${opts.maxInFlight}) must be an integer >= 1`);
    }
    this.#opts = opts;
    this.#gate = new Gate(opts.maxInFlight);
    this.#rowsGate = new Gate(Math.max(2, 2 * opts.threads));
    // Each worker's current dictionary, and two of replaced workers (crashed or over WORKER_MAX_MEMORY_MB).
    this.#dictionaries = new SeriesDictionaries(opts.threads + 2);
    if (opts.threads === 0) {
      this.#piscina = null;
      this.#inline = new Decoder(opts.settings);
    } else {
      this.#inline = null;
      this.#piscina = new Piscina({
        filename: opts.workerFile ?? POOL_DEFAULTS.workerFile,
        minThreads: opts.threads,
        maxThreads: opts.threads,
        // Our own in-flight gate is the real bound; piscina's queue only ever holds what passed it.
        maxQueue: opts.maxInFlight + this.#rowsGate.limit,
        concurrentTasksPerWorker: 1,
        idleTimeout: Infinity,
        workerData: opts.settings,
        // The young generation bounded too: left to V8 it grows far past WORKER_MAX_MEMORY_MB's share.
        resourceLimits: { maxOldGenerationSizeMb: opts.workerMaxMemoryMb, maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      });
      // piscina emits 'error' for failures it cannot attribute to a task; without a listener it would
      // crash the process. Task failures reject the task's own promise, which is where we retry.
      this.#piscina.on('error', (err: Error) => opts.onPoolError?.(err));
    }
  }

  /**
   * Batches in flight: what the busy clock samples ten times a second. stats reads piscina's
   * utilization too, a summary of its run-time histogram computed anew on every read.
   */
  get inFlight(): number {
    return this.#gate.held;
  }

  get stats(): PoolStats {
    const p = this.#piscina;
    return {
      threads: this.#opts.threads,
      inFlight: this.#gate.held,
      maxInFlight: this.#opts.maxInFlight,
      queued: p === null ? 0 : p.queueSize,
      utilization: p === null ? 0 : p.utilization,
    };
  }

  /** True when a submit would have to wait. */
  get full(): boolean {
    return this.#gate.held >= this.#gate.limit;
  }

  /** Resolves once a batch may be submitted (bounded in-flight). */
  async acquire(): Promise<void> {
    if (this.#closed) throw closedError();
    await this.#gate.acquire();
    if (this.#closed) {
      this.#gate.release();
      throw closedError();
    }
  }

  /** Resolves when nothing is in flight. */
  idle(): Promise<void> {
    return this.#gate.idle();
  }

  /** Decode one batch; the caller must have called acquire(). Never rejects: failures become 'poisoned'. */
  async run(batch: Batch, nowMs = Date.now()): Promise<BatchOutcome> {
    try {
      let lastErr: Error | undefined;
      for (let attempt = 0; attempt < 2; attempt++) {
        const queuedAt = performance.now();
        try {
          if (this.#inline !== null) {
            const t = performance.now();
            // In-thread the batch's own bytes are read in place: nothing to move, so nothing to copy.
            const result = this.#inline.decodeBytes(batch.data, batch.offsets, nowMs, batch.ends);
            return { kind: 'ok', result, waitSeconds: 0, runSeconds: (performance.now() - t) / 1000 };
          }
          const task = pack(batch);
          // The timeout also covers a worker that never comes up, which piscina would otherwise wait on forever.
          const wire = (await this.#piscina!.run(task, {
            transferList: transferList(task),
            signal: AbortSignal.timeout(this.#opts.taskTimeoutMs),
          })) as WireResult;
          // Results of one worker arrive in the order it produced them: register its new keys now.
          const result = this.#dictionaries.expand(wire);
          this.#busySeconds += result.decodeSeconds;
          const total = (performance.now() - queuedAt) / 1000;
          return { kind: 'ok', result, waitSeconds: Math.max(0, total - result.decodeSeconds), runSeconds: result.decodeSeconds };
        } catch (err) {
          lastErr = err instanceof Error ? err : new Error(String(err));
          this.#opts.onFailure?.(lastErr, attempt === 0);
        }
      }
      return { kind: 'poisoned', reason: `worker failed twice on this batch: ${lastErr?.message ?? 'unknown error'}` };
    } finally {
      this.release();
    }
  }

  /**
   * The series keys shared with the workers that format rows; made on first use. Its bytes are a
   * sixteenth of WORKER_MAX_MEMORY_MB at most: a worker keeps the keys it read as strings in its heap.
   */
  get keyArena(): KeyArena {
    this.#keyArena ??= new KeyArena(keyArenaBytes(this.#opts.workerMaxMemoryMb));
    return this.#keyArena;
  }

  /** True when rows can be formatted in a worker (there are workers). */
  get formatsRows(): boolean {
    return this.#piscina !== null && !this.#closed;
  }

  /**
   * Seconds the workers spent running tasks (decode and rows) since the pool started, as measured
   * where they ran: with wall time and the thread count, how busy the workers were over a span.
   */
  get workerBusySeconds(): number {
    return this.#busySeconds;
  }

  get threads(): number {
    return this.#opts.threads;
  }

  /**
   * Formats a chunk of rows in a worker. Null when it could not (in-thread, closed, or the worker
   * failed or timed out: its columns were moved, so the caller formats the rows itself, as it would
   * without workers). Never rejects.
   */
  async formatRows(task: RowsTask, transfer: ArrayBuffer[], onFailure?: (err: Error) => void): Promise<RowsWire | null> {
    if (this.#piscina === null || this.#closed) return null;
    await this.#rowsGate.acquire();
    try {
      if (this.#closed) return null;
      const wire = (await this.#piscina.run(task, { transferList: transfer, signal: AbortSignal.timeout(this.#opts.taskTimeoutMs) })) as RowsWire;
      this.#busySeconds += wire.seconds;
      return wire;
    } catch (err) {
      // Said once: a worker that cannot format rows fails the same way for every chunk.
      if (!this.#rowsFailed) onFailure?.(err instanceof Error ? err : new Error(String(err)));
      this.#rowsFailed = true;
      return null;
    } finally {
      this.#rowsGate.release();
    }
  }

  /** Gives back a slot taken by acquire() without running a batch (run() does this itself). */
  release(): void {
    this.#gate.release();
  }

  /** Idempotent; waits for in-flight work up to timeoutMs, then terminates the workers. */
  close(timeoutMs = 30_000): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true;
      await withTimeout(this.idle(), timeoutMs, 'decode pool drain').catch((err: unknown) => {
        if (!(err instanceof TimeoutError)) throw err;
      });
      // Callers still waiting for a slot get one as destroyed tasks release theirs, and then the closed error.
      if (this.#piscina !== null) await this.#piscina.destroy();
    })();
    return this.#closing;
  }
}
