// Pipelined writes: write() may be called while earlier writes are in flight. Writes queue per
// producer ("lane") and whatever queued while a request or transaction was running goes out together
// in the next one (bounded by maxTransactionBytes), so the number of requests and transactions
// follows what throughput needs, without a linger timer. Call order is kept per lane.
import type { Message } from 'kafkajs';
import type { RowRejection, SinkCommit, SinkWriteResult } from '../types.js';
import type { EncodedRows } from './messages.js';

/** One write() waiting in a lane: its messages, which row each is, and where to report. */
export interface QueuedWrite extends EncodedRows {
  readonly rows: number;
  readonly commit: SinkCommit | undefined;
  resolve(r: SinkWriteResult): void;
  reject(err: unknown): void;
}

/** A queued message with the write and row it came from and its key and value bytes. */
export interface Item {
  readonly m: Message;
  readonly w: QueuedWrite;
  readonly row: number;
  readonly size: number;
}

/** Writes a group of queued writes; resolves with the rows the broker refused, per write. */
type GroupWriter = (laneId: string, group: readonly QueuedWrite[]) => Promise<Map<QueuedWrite, RowRejection[]>>;

interface Lane {
  readonly queue: QueuedWrite[];
  running: boolean;
}

/** The messages of a group, each with its write and row, in call order. */
export function flatten(group: readonly QueuedWrite[]): Item[] {
  const out: Item[] = [];
  for (const w of group) for (let i = 0; i < w.messages.length; i++) out.push({ m: w.messages[i]!, w, row: w.rowIndex[i]!, size: w.sizes[i]! });
  return out;
}

export class Lanes {
  readonly #lanes = new Map<string, Lane>();

  constructor(
    private readonly maxGroupBytes: number,
    private readonly writeGroup: GroupWriter,
    /** Called after each group that was written. */
    private readonly afterGroup: () => void,
  ) {}

  /** Queues a write on lane `id`; resolves once it (and the group it went out with) was written. */
  enqueue(id: string, rows: EncodedRows, count: number, commit: SinkCommit | undefined): Promise<SinkWriteResult> {
    let lane = this.#lanes.get(id);
    if (lane === undefined) {
      lane = { queue: [], running: false };
      this.#lanes.set(id, lane);
    }
    const queue = lane.queue;
    const done = new Promise<SinkWriteResult>((resolve, reject) => {
      queue.push({ ...rows, rows: count, commit, resolve, reject });
    });
    this.#pump(id, lane);
    return done;
  }

  /** Runs the lane until its queue is empty; what queued meanwhile goes out together. */
  #pump(id: string, lane: Lane): void {
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
