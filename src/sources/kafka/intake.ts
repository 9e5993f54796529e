// The intake: fetched batches wait here for the engine, so the kafkajs fetch loop never stalls on
// the pool (eachBatch returns at once, and heartbeats only flow between batches). Bounded by bytes:
// a partition that fetches while the intake holds `maxBytes` or more is paused; every paused partition
// resumes once the pump has brought the intake down to half of it (hysteresis, so a full intake
// does not pause and resume a partition on every batch). A batch that is a view of a fetch response
// (src/kafka/frame-pool.ts) holds the whole response, other partitions' records included: the intake
// counts each such response once, whole, while any batch of it waits, so that many small batches of
// one slow partition cannot hold many times the bound.
import { Signal } from '../../async/index.js';
import { frameOf } from '../../kafka/frame-pool.js';
import type { SourceBatch } from '../types.js';
import { byTopic, type Held } from './assignment.js';

/** What the intake calls on the consumer: kafkajs's pause/resume take the same shape. */
export interface FlowControl {
  pause(topics: Array<{ topic: string; partitions: number[] }>): void;
  resume(topics: Array<{ topic: string; partitions: number[] }>): void;
}

export interface IntakeOptions {
  /** Bytes waiting for the engine at which fetching partitions are paused (resumed at half). */
  readonly maxBytes: number;
  /** Hands a batch to the engine; resolves when it is dispatched (waits for pool capacity). */
  readonly submit: (batch: SourceBatch) => Promise<void>;
  /** False once the partition was dropped or replaced: its queued batches are skipped. */
  readonly isCurrent: (h: Held) => boolean;
  /** The engine refused a batch: nothing more is submitted. */
  readonly onFatal: (err: Error) => void;
  /** Partitions paused right now (a gauge). */
  readonly paused: { set(value: number): void };
}

interface Item {
  readonly held: Held;
  readonly batch: SourceBatch;
  /** The fetch response the batch is a view of, as found when it was queued (null: its own bytes). */
  readonly frame: SharedArrayBuffer | null;
}

export class Intake {
  readonly #o: IntakeOptions;
  #queue: Item[] = [];
  #bytes = 0;
  /** Queued batches per fetch response they are views of (each response counted once in #bytes). */
  readonly #frames = new Map<SharedArrayBuffer, number>();
  /** Batches queued per partition: "is anything of it in hand" for the lag, without a scan. */
  readonly #queued = new Map<Held, number>();
  readonly #paused = new Set<Held>();
  #flow: FlowControl | null = null;
  #submitting = false;
  #stopped = false;
  /** Raised by push(); the pump makes a new one before each wait. */
  #work = new Signal();
  /** Raised once the queue is empty and nothing is being submitted. */
  #emptied: Signal | null = null;

  constructor(o: IntakeOptions) {
    if (!(o.maxBytes >= 1)) throw new RangeError(`Intake: maxBytes must be >= 1, got ${o.maxBytes}`);
    this.#o = o;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get pausedCount(): number {
    return this.#paused.size;
  }

  /** True while a batch of `h` waits in the queue. */
  has(h: Held): boolean {
    return this.#queued.has(h);
  }

  /** The consumer of the current session (null between sessions): pause and resume go to it. */
  attach(flow: FlowControl | null): void {
    this.#flow = flow;
  }

  /** Queues the batches of one fetch of `h`, then pauses `h` if the intake is over its budget. */
  push(h: Held, batches: readonly SourceBatch[]): void {
    if (this.#stopped || batches.length === 0) return;
    for (const batch of batches) {
      const item = { held: h, batch, frame: frameOf(batch.data) };
      this.#queue.push(item);
      this.#bytes += this.#count(item, 1);
    }
    this.#queued.set(h, (this.#queued.get(h) ?? 0) + batches.length);
    this.#work.raise();
    if (this.#bytes >= this.#o.maxBytes && !this.#paused.has(h) && this.#flow !== null) {
      this.#flow.pause(byTopic([h.tp]));
      this.#paused.add(h);
      this.#o.paused.set(this.#paused.size);
    }
  }

  /**
   * Drops every queued batch (a new generation, or the session ended); resumes what we paused on the
   * attached consumer, since kafkajs keeps pause state across a rebalance and it is ours to undo.
   */
  reset(): void {
    this.#dropQueue();
    this.#resumeAll();
    this.#paused.clear();
    this.#o.paused.set(0);
  }

  /** Shutdown: queued batches are dropped (commits never pass them), nothing more is taken or resumed. */
  stop(): void {
    this.#stopped = true;
    this.#dropQueue();
    this.#work.raise();
  }

  /** Resolves when the queue is empty and no batch is being submitted. */
  idle(): Promise<void> {
    if (this.#queue.length === 0 && !this.#submitting) return Promise.resolve();
    this.#emptied ??= new Signal();
    return this.#emptied.wait();
  }

  /** The pump: moves batches to the engine in order until stop(). Never rejects. */
  async run(): Promise<void> {
    for (;;) {
      const item = this.#queue.shift();
      if (item === undefined) {
        this.#settle();
        if (this.#stopped) return;
        this.#work = new Signal();
        await this.#work.wait();
        continue;
      }
      this.#bytes += this.#count(item, -1);
      const left = (this.#queued.get(item.held) ?? 1) - 1;
      if (left > 0) this.#queued.set(item.held, left);
      else this.#queued.delete(item.held);
      if (!this.#o.isCurrent(item.held)) continue;
      this.#submitting = true;
      try {
        await this.#o.submit(item.batch);
      } catch (err) {
        this.stop();
        this.#o.onFatal(err instanceof Error ? err : new Error(String(err)));
      } finally {
        this.#submitting = false;
      }
      if (this.#bytes <= this.#o.maxBytes / 2 && !this.#stopped) this.#resumeAll();
    }
  }

  /** The bytes a batch adds to the intake (dir 1) or takes away (dir -1): its own, or its response's when the first (last) of it comes (goes). */
  #count({ batch, frame }: Item, dir: 1 | -1): number {
    if (frame === null) return dir * batch.data.length;
    const n = (this.#frames.get(frame) ?? 0) + dir;
    if (n > 0) this.#frames.set(frame, n);
    else this.#frames.delete(frame);
    return (dir === 1 && n === 1) || (dir === -1 && n === 0) ? dir * frame.byteLength : 0;
  }

  #dropQueue(): void {
    this.#queue = [];
    this.#bytes = 0;
    this.#frames.clear();
    this.#queued.clear();
    this.#settle();
  }

  #settle(): void {
    if (this.#queue.length > 0 || this.#submitting || this.#emptied === null) return;
    this.#emptied.raise();
    this.#emptied = null;
  }

  #resumeAll(): void {
    const flow = this.#flow;
    if (flow === null || this.#paused.size === 0) return;
    for (const h of [...this.#paused]) {
      try {
        flow.resume(byTopic([h.tp]));
      } catch {
        // The consumer is not running yet (kafkajs throws until run()): the next pass resumes it.
        continue;
      }
      this.#paused.delete(h);
    }
    this.#o.paused.set(this.#paused.size);
  }
}
