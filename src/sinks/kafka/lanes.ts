// Pipelined writes: write() may be called while earlier writes are in flight. Writes queue per
// producer ("lane") and whatever queued while a request or transaction was running goes out together
// in the next one (bounded by maxTransactionBytes), so the number of requests and transactions
// follows what throughput needs, without a linger timer. Call order is kept per lane.
import type { RowRejection, SinkCommit, SinkWriteResult } from '../types.js';
import { messageSize, type EncodedRows } from './messages.js';

/** What a lane needs of a write's encoded rows: their bytes (to bound a group) and the rows refused up front. */
export interface LaneRows {
  readonly bytes: number;
  readonly rejected: readonly RowRejection[];
}

/** One write() waiting in a lane: its encoded rows, how many rows it had, and where to report. */
export type QueuedWrite<R extends LaneRows = LaneRows> = R & {
  readonly rows: number;
  readonly commit: SinkCommit | undefined;
  resolve(r: SinkWriteResult): void;
  reject(err: unknown): void;
};

/** Writes a group of queued writes; resolves with the rows the broker refused, per write. */
type GroupWriter<R extends LaneRows> = (laneId: string, group: ReadonlyArray<QueuedWrite<R>>) => Promise<Map<QueuedWrite<R>, RowRejection[]>>;

interface Lane<R extends LaneRows> {
  readonly queue: Array<QueuedWrite<R>>;
  running: boolean;
}

/**
 * The messages of a group in call order, by number: message k is message msg[k] of write
 * writes[write[k]]. The refusal handling and the request cutting go by these numbers, so a group
 * makes no object per message.
 */
/** A queued write of the statistics sink. */
export type SinkWrite = QueuedWrite<EncodedRows>;

export class GroupMessages {
  readonly write: Int32Array;
  readonly msg: Int32Array;
  /** 0 .. n-1: every message of the group. */
  readonly all: number[];

  constructor(readonly writes: readonly SinkWrite[]) {
    let n = 0;
    for (const w of writes) n += w.count;
    this.write = new Int32Array(n);
    this.msg = new Int32Array(n);
    this.all = new Array<number>(n);
    let k = 0;
    for (let j = 0; j < writes.length; j++) {
      for (let i = 0; i < writes[j]!.count; i++, k++) {
        this.write[k] = j;
        this.msg[k] = i;
        this.all[k] = k;
      }
    }
  }

  /** Key and value bytes of message k. */
  size(k: number): number {
    return messageSize(this.writes[this.write[k]!]!, this.msg[k]!);
  }
}

export class Lanes<R extends LaneRows = LaneRows> {
  readonly #lanes = new Map<string, Lane<R>>();

  constructor(
    private readonly maxGroupBytes: number,
    private readonly writeGroup: GroupWriter<R>,
    /** Called after each group that was written. */
    private readonly afterGroup: () => void,
  ) {}

  /** Queues a write on lane `id`; resolves once it (and the group it went out with) was written. */
  enqueue(id: string, rows: R, count: number, commit: SinkCommit | undefined): Promise<SinkWriteResult> {
    let lane = this.#lanes.get(id);
    if (lane === undefined) {
      lane = { queue: [], running: false };
      this.#lanes.set(id, lane);
    }
    const queue = lane.queue;
    const done = new Promise<SinkWriteResult>((resolve, reject) => {
      queue.push({ ...rows, rows: count, commit, resolve, reject } as QueuedWrite<R>);
    });
    this.#pump(id, lane);
    return done;
  }

  /** Runs the lane until its queue is empty; what queued meanwhile goes out together. */
  #pump(id: string, lane: Lane<R>): void {
    if (lane.running) return;
    lane.running = true;
    void (async () => {
      while (lane.queue.length > 0) {
        let bytes = 0;
        let n = 0;
        while (n < lane.queue.length && (n === 0 || bytes + lane.queue[n]!.bytes <= this.maxGroupBytes)) bytes += lane.queue[n++]!.bytes;
        const group = lane.queue.splice(0, n);
        try {
          const refused = await this.writeGroup(id, group);
          for (const w of group) w.resolve({ rejected: [...w.rejected, ...(refused.get(w) ?? [])].sort((a, b) => a.index - b.index) });
          this.afterGroup();
        } catch (err) {
          for (const w of group) w.reject(err);
        }
      }
      lane.running = false;
    })();
  }
}
