// The partitions this member holds in the current group generation, and the lane behind each. kafkajs
// restarts every assigned partition from its committed offset after each join, so a join never
// continues a lane: it replaces the whole table, with fresh lane numbers, and each partition's lane
// is opened again at its commit. Numbers are never reused, so a late result of the previous
// generation can never be taken for the new one. Within a generation a partition's lane is replaced
// too when its state was lost (its owner worker died): the partition is replayed from its commit
// point under a fresh lane number.
import type { LaneInit } from '../../commit/types.js';

export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

export const tpKey = (tp: TopicPartition): string => `${tp.topic}:${tp.partition}`;

/** A partition held in one generation; `id` is the number of its lane at the lane host. */
export interface Held {
  readonly id: number;
  readonly tp: TopicPartition;
  readonly gen: number;
  /** Resolves once the partition is restored (its lane opened): its batches wait for it. */
  ready: Promise<void>;
  /** Set when the sink's stored position differs from where kafkajs starts: the first batch seeks. */
  seekTo: number | null;
  /** What its lane opened at and the offset it resumed from (null until restored): a rebuild before its first commit point replays from there. */
  restoredAt: { readonly init: LaneInit; readonly start: number | null } | null;
}

/** Groups partitions by topic, the shape kafkajs's pause/resume/seek calls take. */
export function byTopic(tps: Iterable<TopicPartition>): Array<{ topic: string; partitions: number[] }> {
  const m = new Map<string, number[]>();
  for (const tp of tps) {
    const list = m.get(tp.topic);
    if (list === undefined) m.set(tp.topic, [tp.partition]);
    else list.push(tp.partition);
  }
  return [...m].map(([topic, partitions]) => ({ topic, partitions }));
}

/** Flattens a kafkajs member assignment ({ topic: [partitions] }). */
export function assignedPartitions(assignment: Readonly<Record<string, readonly number[]>>): TopicPartition[] {
  const tps: TopicPartition[] = [];
  for (const [topic, partitions] of Object.entries(assignment)) for (const partition of partitions) tps.push({ topic, partition });
  return tps;
}

export class Assignment {
  readonly #held = new Map<string, Held>();
  #nextId = 1;
  #gen = 0;

  get generation(): number {
    return this.#gen;
  }

  get size(): number {
    return this.#held.size;
  }

  values(): IterableIterator<Held> {
    return this.#held.values();
  }

  get(tp: TopicPartition): Held | undefined {
    return this.#held.get(tpKey(tp));
  }

  /** True while `h` is still the held entry of its partition (not dropped, not replaced by a join). */
  isCurrent(h: Held): boolean {
    return this.#held.get(tpKey(h.tp)) === h;
  }

  /** Starts a new generation holding `tps`, each under a fresh id; `ready` is set by the restore. */
  open(tps: readonly TopicPartition[]): Held[] {
    const gen = ++this.#gen;
    const held = tps.map((tp): Held => ({ id: this.#nextId++, tp, gen, ready: Promise.resolve(), seekTo: null, restoredAt: null }));
    for (const h of held) this.#held.set(tpKey(h.tp), h);
    return held;
  }

  /** The held entry whose lane is `id`, if it is still held. */
  byId(id: number): Held | undefined {
    for (const h of this.#held.values()) if (h.id === id) return h;
    return undefined;
  }

  /** The same partition in the same generation under a fresh lane number (its old lane's batches are then stale). */
  replace(h: Held): Held {
    const next: Held = { id: this.#nextId++, tp: h.tp, gen: h.gen, ready: Promise.resolve(), seekTo: null, restoredAt: null };
    this.#held.set(tpKey(h.tp), next);
    return next;
  }

  /** Empties the table (each lane got its partition's identity when it opened, and keeps it to the end). */
  clear(): Held[] {
    const old = [...this.#held.values()];
    this.#held.clear();
    return old;
  }
}
