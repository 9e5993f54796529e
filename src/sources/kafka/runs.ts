// Record runs: a fetched partition's record set as columns, made by the fast fetch decoder
// (./records.ts decodeRun) for the topics a source reads as runs, handed over by FastBatch
// (./batch.ts) and cut into pool batches by ./fetch.ts. Here the run itself and the registry of who
// may get one. Pure: no kafkajs, no I/O.
import { FastRecord, LOG_APPEND_TIME, type KjsMessage } from './fast-record.js';

/**
 * One partition's record set as columns: what FastRecords would hold, record by record, without an
 * object per record. Made only where every record of the set takes the fast path and has attributes
 * 0 (the columns keep none); the source cuts batches from the columns (./fetch.ts) and copies runs of
 * values in one copy each. kafkajs sees `messages`: an array of the records' number whose first and
 * last elements are FastRecords and the rest holes, which only FastBatch (./batch.ts) reads (runs are
 * made only once it is in kafkajs's place, and kept as runs only for the topics of useRuns).
 */
export class RecordRun {
  readonly messages: KjsMessage[];
  /**
   * Where the set lies in a response of the frame pool (src/kafka/frame-pool.ts): the run's hold on
   * it, dropped once the run was cut into batches (each then holds the response itself); null for a
   * set anywhere else, whose values the batches copy.
   */
  hold: (() => void) | null = null;

  constructor(
    readonly set: Buffer,
    readonly count: number,
    readonly positions: Float64Array,
    /** Where each value is in the set and how long (-1: null). */
    readonly valueAt: Int32Array,
    readonly valueLen: Int32Array,
    /** Where each key is in the set (-1: null) and how long (-1: null). */
    readonly keyAt: Int32Array,
    readonly keyLen: Int32Array,
    readonly createTimes: Float64Array,
    /** The record batch each record is from, an index into contexts. */
    readonly batchOf: Uint32Array,
    readonly contexts: ReadonlyArray<FastRecord['batchContext']>,
  ) {
    const m = new Array<KjsMessage>(count);
    m[0] = this.record(0) as unknown as KjsMessage;
    m[count - 1] = this.record(count - 1) as unknown as KjsMessage;
    this.messages = m;
    runs.set(m, this);
  }

  /** Record i as the fast decoder makes it. */
  record(i: number): FastRecord {
    const keyLen = this.keyLen[i]!;
    return new FastRecord(0, this.positions[i]!, keyLen === -1 ? -1 : this.keyAt[i]!, keyLen, this.contexts[this.batchOf[i]!]!, this.set, this.valueAt[i]!, this.valueLen[i]!, this.createTimes[i]!);
  }

  /** Record i's timestamp in ms, as Number(record(i).timestamp). */
  timestampMs(i: number): number {
    const b = this.contexts[this.batchOf[i]!]!;
    return b.timestampType === LOG_APPEND_TIME && b.maxTimestamp ? Number(b.maxTimestamp) : this.createTimes[i]!;
  }

  /** Every record as a FastRecord: what decodeMessages returns for the same set. */
  materialize(): KjsMessage[] {
    const out = new Array<KjsMessage>(this.count);
    for (let i = 0; i < this.count; i++) out[i] = this.record(i) as unknown as KjsMessage;
    return out;
  }
}

const runs = new WeakMap<readonly unknown[], RecordRun>();

/** The run whose `messages` these are (undefined for any other array). */
export function runOf(messages: readonly unknown[]): RecordRun | undefined {
  return runs.get(messages);
}

/** Set once FastBatch is kafkajs's Batch: kafkajs's own would read a run's holes as missing records. */
let runsEnabled = false;

/** Called by installFastBatch once FastBatch is in kafkajs's place. */
export function enableRuns(): void {
  runsEnabled = true;
}

/**
 * Topics whose batches may be runs, with the number of sources that read them so: only a reader that
 * cuts from the run (the Kafka source) may get one. Any other consumer in the process (a tool's, a
 * test's) iterates its batches' messages, and gets every record, as FastRecords.
 */
const runTopics = new Map<string, number>();

/** The batches of `topics` may be runs until the returned function is called (once). */
export function useRuns(topics: readonly string[]): () => void {
  for (const t of topics) runTopics.set(t, (runTopics.get(t) ?? 0) + 1);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    for (const t of topics) {
      const n = runTopics.get(t)! - 1;
      if (n === 0) runTopics.delete(t);
      else runTopics.set(t, n);
    }
  };
}

/** True when a batch of `topic` may be a run (FastBatch asks). */
export function runsFor(topic: string): boolean {
  return runTopics.has(topic);
}

/** True when a record set may be decoded as a run: FastBatch is in place and some source reads runs. */
export function runsWanted(): boolean {
  return runsEnabled && runTopics.size > 0;
}
