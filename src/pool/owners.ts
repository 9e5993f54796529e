// The lane owners of LANE_STATE=worker: one piscina of one thread per owner, so every task of a lane
// reaches the worker that holds its state (lane affinity), in the order it was sent (one thread, one
// task at a time, piscina's queue kept strictly first in first out), while piscina still holds each
// worker to WORKER_MAX_MEMORY_MB; a task past TASK_TIMEOUT_SECONDS loses its owner too.
// A lane is assigned to the owner with the fewest lanes when it opens, for its life.
//
// A worker that dies takes its lanes' state with it. The owner is then replaced as a whole (a fresh
// piscina: the old one is destroyed, which also ends a worker stuck past the timeout, and every task
// still queued for it fails instead of running on a worker that does not hold its lane), its lanes
// are unassigned and the listener is told once which lanes went: the engine rebuilds them by replay
// where the source can replay a lane, and stops (STREAMSTATS_LANE_OWNER_LOST) where it cannot.
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { Gate, TimeoutError, withTimeout } from '../async/index.js';
import { WORKER_YOUNG_GENERATION_MB } from '../config/memory.js';
import { StreamstatsError } from '../errors.js';
import type { OwnerReply, OwnerSettings, OwnerTask } from '../windows/owner.js';
import type { PoolStats } from './index.js';

export interface OwnersOptions {
  /** Owner workers (WORKER_THREADS, at least 1). */
  readonly threads: number;
  /** Tasks in flight (queued + running) over all owners at most: the bound the source feels. */
  readonly maxInFlight: number;
  readonly settings: OwnerSettings;
  readonly workerMaxMemoryMb: number;
  readonly taskTimeoutMs: number;
  /** Worker entry; the default is the compiled workers/lanes.js. */
  readonly workerFile?: string;
  /** Errors piscina reports outside any task (e.g. a worker that could not start). */
  readonly onPoolError?: (err: Error) => void;
}

export const OWNERS_DEFAULTS = {
  workerFile: fileURLToPath(new URL('../../workers/lanes.js', import.meta.url)),
} as const;

interface Owner {
  readonly index: number;
  readonly piscina: Piscina;
  /** Lanes assigned to it now. */
  lanes: number;
  /** Set once it failed: the lanes it held then (it is replaced, and its late failures name them). */
  lost: readonly number[] | null;
}

/** Told once per failed owner: which lanes lost their state, and why. */
export type OwnerLostListener = (owner: number, lanes: readonly number[], cause: unknown) => void;

/** The lanes an owner held, named in the error that stops the engine when it is lost. */
export function ownerLost(owner: number, lanes: readonly number[], cause: unknown): StreamstatsError {
  const why = cause instanceof Error ? cause.message : String(cause);
  return new StreamstatsError(
    'STREAMSTATS_LANE_OWNER_LOST',
    `LANE_STATE=worker: the worker that owned lane${lanes.length === 1 ? '' : 's'} ${lanes.join(', ')} (owner ${owner}) failed (${why}) and their open windows went with it; ` +
      'the process exits so that its supervisor restarts it, and every lane resumes from its commit point (nothing committed is lost or written twice)',
    { cause },
  );
}

export class LaneOwners {
  readonly #opts: OwnersOptions;
  readonly #owners: Owner[];
  readonly #gate: Gate;
  /** lane -> its owner, for the life of the lane. */
  readonly #assigned = new Map<number, Owner>();
  #busySeconds = 0;
  #onLost: OwnerLostListener | undefined;
  #closed = false;
  #closing: Promise<void> | null = null;

  constructor(opts: OwnersOptions) {
    if (!Number.isInteger(opts.threads) || opts.threads < 1) throw new RangeError(`threads (${opts.threads}) must be an integer >= 1`);
    if (!Number.isInteger(opts.maxInFlight) || opts.maxInFlight < 1) throw new RangeError(`maxInFlight (${opts.maxInFlight}) must be an integer >= 1`);
    this.#opts = opts;
    this.#gate = new Gate(opts.maxInFlight);
    this.#owners = [];
    for (let i = 0; i < opts.threads; i++) this.#owners.push(this.#spawn(i));
  }

  /** Listens for owners that fail (one listener: the engine). */
  onLost(listener: OwnerLostListener): void {
    this.#onLost = listener;
  }

  #spawn(index: number): Owner {
    const opts = this.#opts;
    const piscina = new Piscina({
      filename: opts.workerFile ?? OWNERS_DEFAULTS.workerFile,
      minThreads: 1,
      maxThreads: 1,
      // The in-flight gate is the real bound; lane verbs outside it (open, idle, close) are a few per lane.
      maxQueue: opts.maxInFlight + 1024,
      concurrentTasksPerWorker: 1,
      // A lane's tasks must run in the order they were sent. piscina keeps that only for tasks
      // without an abort signal (abortable ones wait in a second queue that is not first in first
      // out) and with stricterFIFO (else a task it could not hand to the busy worker goes back at
      // the tail, behind later ones). So the task timeout is ours (run()), not an AbortSignal.
      stricterFIFO: true,
      idleTimeout: Infinity,
      workerData: { ...opts.settings, owner: index },
      resourceLimits: { maxOldGenerationSizeMb: opts.workerMaxMemoryMb, maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
    });
    piscina.on('error', (err: Error) => opts.onPoolError?.(err));
    return { index, piscina, lanes: 0, lost: null };
  }

  /**
   * The owner failed: replaces it by a fresh one, unassigns its lanes and tells the listener (once per
   * owner, however many of its tasks fail). Returns the lanes it held.
   */
  #lose(owner: Owner, cause: unknown): readonly number[] {
    if (owner.lost !== null) return owner.lost;
    const lanes = this.lanesOf(owner.index);
    owner.lost = lanes;
    for (const lane of lanes) this.#assigned.delete(lane);
    owner.lanes = 0;
    if (!this.#closed && this.#owners[owner.index] === owner) this.#owners[owner.index] = this.#spawn(owner.index);
    // Terminates a worker stuck in a task, and fails what was queued behind it.
    void owner.piscina.destroy().catch(() => {});
    this.#onLost?.(owner.index, lanes, cause);
    return lanes;
  }

  /** Gives the lane an owner for its life: the one with the fewest lanes (the lowest index of equals). */
  assign(lane: number): number {
    const had = this.#assigned.get(lane);
    if (had !== undefined) return had.index;
    let best = this.#owners[0]!;
    for (const o of this.#owners) if (o.lanes < best.lanes) best = o;
    best.lanes++;
    this.#assigned.set(lane, best);
    return best.index;
  }

  /** The lane closed: its owner has room for another (the close task was sent first, so it runs first). */
  unassign(lane: number): void {
    const o = this.#assigned.get(lane);
    if (o === undefined) return;
    o.lanes--;
    this.#assigned.delete(lane);
  }

  /** The lanes an owner holds now. */
  lanesOf(owner: number): number[] {
    const out: number[] = [];
    for (const [lane, o] of this.#assigned) if (o.index === owner) out.push(lane);
    return out.sort((a, b) => a - b);
  }

  get stats(): PoolStats {
    let queued = 0;
    let utilization = 0;
    for (const o of this.#owners) {
      queued += o.piscina.queueSize;
      utilization += o.piscina.utilization;
    }
    return { threads: this.#opts.threads, inFlight: this.#gate.held, maxInFlight: this.#opts.maxInFlight, queued, utilization: utilization / this.#owners.length };
  }

  get full(): boolean {
    return this.#gate.held >= this.#gate.limit;
  }

  /** Tasks in flight, without stats' utilization (a histogram summary per owner, computed on every read). */
  get inFlight(): number {
    return this.#gate.held;
  }

  get threads(): number {
    return this.#opts.threads;
  }

  /** Seconds the owners spent running tasks, as measured where they ran. */
  get workerBusySeconds(): number {
    return this.#busySeconds;
  }

  /** Resolves once a batch may be sent (bounded in flight). */
  async acquire(): Promise<void> {
    if (this.#closed) throw closedError();
    await this.#gate.acquire();
    if (this.#closed) {
      this.#gate.release();
      throw closedError();
    }
  }

  release(): void {
    this.#gate.release();
  }

  idle(): Promise<void> {
    return this.#gate.idle();
  }

  /**
   * Runs a task on the lane's owner. Rejects with STREAMSTATS_LANE_OWNER_LOST when the owner failed
   * (its worker crashed, ran out of memory or past the task timeout) or was replaced since the lane
   * opened (the replacement does not hold it).
   */
  async run(task: OwnerTask, transfer: ArrayBuffer[] = []): Promise<Extract<OwnerReply, { kind: 'done' }>> {
    const owner = this.#assigned.get(task.lane);
    if (owner === undefined) throw new StreamstatsError('STREAMSTATS_LANE_OWNER_LOST', `lane ${task.lane} has no owner (it was not opened)`);
    if (this.#closed) throw closedError();
    let reply: OwnerReply;
    let timer: NodeJS.Timeout | undefined;
    try {
      const ran = owner.piscina.run(task, { transferList: transfer }) as Promise<OwnerReply>;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`a task ran past TASK_TIMEOUT_SECONDS=${this.#opts.taskTimeoutMs / 1000}`)), this.#opts.taskTimeoutMs);
      });
      reply = await Promise.race([ran, late]);
    } catch (err) {
      if (this.#closed) throw err;
      const lanes = this.#lose(owner, err);
      throw ownerLost(owner.index, lanes.length > 0 ? lanes : [task.lane], err);
    } finally {
      clearTimeout(timer);
    }
    if (reply.kind === 'lost') {
      const cause = new Error(`a replacement worker does not hold lane ${reply.lane}`);
      throw ownerLost(owner.index, this.#lose(owner, cause), cause);
    }
    this.#busySeconds += reply.seconds;
    return reply;
  }

  /** Idempotent; waits for in-flight work up to timeoutMs, then terminates the owners. */
  close(timeoutMs = 30_000): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true;
      await withTimeout(this.idle(), timeoutMs, 'lane owners drain').catch((err: unknown) => {
        if (!(err instanceof TimeoutError)) throw err;
      });
      await Promise.all(this.#owners.map((o) => o.piscina.destroy()));
    })();
    return this.#closing;
  }
}

function closedError(): StreamstatsError {
  return new StreamstatsError('STREAMSTATS_POOL_CLOSED', 'the lane owners are closed');
}
