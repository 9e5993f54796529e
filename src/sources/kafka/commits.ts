// Commits of the lanes' commit points: per held partition, the offset its lane says may be
// committed (the oldest position still feeding an open window) with the emitted-window boundary as
// metadata, so a restart replays exactly the open windows' input and skips what was emitted. Never
// more than the lane's point; one commit at a time, in call order; an unchanged point is not sent
// again. With a position store that is not the group itself (PostgreSQL), the points it stored are
// committed instead, trailing it: the store restores, the group's offsets are there for lag tools.
import type { Consumer } from 'kafkajs';
import type { Logger } from 'pino';
import { formatCommitMeta } from '../../commit/meta.js';
import type { CommitPoint, PositionStore } from '../../commit/types.js';
import type { LaneHost } from '../types.js';
import type { Metrics } from '../../metrics/index.js';
import type { Held } from './assignment.js';

export type CommitReason = 'interval' | 'rebalance' | 'shutdown';

export interface CommitterOptions {
  readonly lanes: Pick<LaneHost, 'status'>;
  readonly metrics: Pick<Metrics, 'commits' | 'commitSeconds'>;
  readonly logger: Logger;
  /** The consumer of the current session (null between sessions: nothing to commit through). */
  readonly consumer: () => Pick<Consumer, 'commitOffsets'> | null;
  /** The partitions held now. */
  readonly held: () => Iterable<Held>;
  /**
   * Where the committed points come from. 'lanes': the lanes' commit points. A PositionStore: the points
   * it has stored (committed rows), so the group trails the store. 'none': a store that writes the
   * group's offsets itself (the exactly-once Kafka sink, in its transactions): committing here too
   * would race with it, since the broker keeps the offset commit appended last to
   * __consumer_offsets and a transaction's offsets are appended before it commits, so a plain commit
   * of an older point sent meanwhile wins, and the next owner emits windows again.
   */
  readonly from: 'lanes' | 'none' | PositionStore;
}

export class Committer {
  readonly #o: CommitterOptions;
  #chain: Promise<void> = Promise.resolve();
  /** What was last committed for a held partition (position|metadata); gone with the partition. */
  readonly #last = new WeakMap<Held, string>();

  constructor(o: CommitterOptions) {
    this.#o = o;
  }

  /** Queues a commit of every held partition's safe point; resolves once it was sent (or failed, logged). */
  commit(reason: CommitReason): Promise<void> {
    this.#chain = this.#chain.then(() => this.#commitNow(reason));
    return this.#chain;
  }

  async #commitNow(reason: CommitReason): Promise<void> {
    const consumer = this.#o.consumer();
    if (consumer === null || this.#o.from === 'none') return;
    const { metrics, logger } = this.#o;
    const points = await this.#points();
    if (points === null) return;
    const offsets: Array<{ topic: string; partition: number; offset: string; metadata: string }> = [];
    const sent: Array<[Held, string]> = [];
    for (const [h, cp] of points) {
      const metadata = formatCommitMeta(cp);
      const id = `${cp.position}|${metadata}`;
      if (id === this.#last.get(h)) continue;
      offsets.push({ topic: h.tp.topic, partition: h.tp.partition, offset: String(cp.position), metadata });
      sent.push([h, id]);
    }
    if (offsets.length === 0) return;
    const end = metrics.commitSeconds.startTimer();
    try {
      await consumer.commitOffsets(offsets);
      end();
      metrics.commits.inc({ result: 'ok' });
      for (const [h, id] of sent) this.#last.set(h, id);
      logger.debug({ reason, offsets }, 'kafka: committed');
    } catch (err) {
      metrics.commits.inc({ result: 'error' });
      logger.warn({ reason, err }, 'kafka: commit failed; the next one retries');
    }
  }

  /** The point of each held partition that has one; null when the store could not be read. */
  async #points(): Promise<Array<[Held, CommitPoint]> | null> {
    const held = [...this.#o.held()];
    const from = this.#o.from;
    const out: Array<[Held, CommitPoint]> = [];
    if (from === 'lanes') {
      for (const h of held) {
        const cp = this.#o.lanes.status(h.id)?.commitPoint ?? null;
        if (cp !== null) out.push([h, cp]);
      }
      return out;
    }
    if (from === 'none') return out;
    const byTopic = new Map<string, Held[]>();
    for (const h of held) byTopic.set(h.tp.topic, [...(byTopic.get(h.tp.topic) ?? []), h]);
    try {
      for (const [topic, hs] of byTopic) {
        const stored = await from.readPositions(topic, hs.map((h) => h.tp.partition));
        for (const h of hs) {
          const cp = stored.get(h.tp.partition);
          if (cp !== undefined) out.push([h, cp]);
        }
      }
    } catch (err) {
      this.#o.metrics.commits.inc({ result: 'error' });
      this.#o.logger.warn({ err }, 'kafka: reading the stored positions to commit failed; the next commit retries');
      return null;
    }
    return out;
  }
}
