// Commits of the lanes' commit points: per held partition, the offset its lane says may be
// committed (the oldest position still feeding an open window) with the emitted-window boundary as
// metadata, so a restart replays exactly the open windows' input and skips what was emitted. Never
// more than the lane's point; one commit at a time, in call order; an unchanged point is not sent
// again (that part is every source's: ../lanes/commits.ts). With a position store that is not the
// group itself (PostgreSQL), the points it stored are committed instead, trailing it: the store
// restores, the group's offsets are there for lag tools.
import type { Consumer } from 'kafkajs';
import type { Logger } from 'pino';
import { formatCommitMeta } from '../../commit/meta.js';
import type { CommitPoint, PositionStore } from '../../commit/types.js';
import { LaneCommits, type CommitReason } from '../lanes/commits.js';
import type { LaneHost } from '../types.js';
import type { Metrics } from '../../metrics/index.js';
import type { Held } from './assignment.js';

export type { CommitReason } from '../lanes/commits.js';

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

type Offsets = Array<{ topic: string; partition: number; offset: string; metadata: string }>;

export class Committer {
  readonly #o: CommitterOptions;
  readonly #commits: LaneCommits<Held>;
  /** The consumer the points being committed were read for: the commit goes through it. */
  #via: Pick<Consumer, 'commitOffsets'> | null = null;

  constructor(o: CommitterOptions) {
    this.#o = o;
    const offsets = (points: ReadonlyArray<readonly [Held, CommitPoint]>): Offsets =>
      points.map(([h, cp]) => ({ topic: h.tp.topic, partition: h.tp.partition, offset: String(cp.position), metadata: formatCommitMeta(cp) }));
    this.#commits = new LaneCommits<Held>({
      metrics: o.metrics,
      logger: o.logger,
      points: () => this.#points(),
      // The offset and its metadata as they go on the wire: what the broker would keep.
      mark: (_, cp) => `${cp.position}|${formatCommitMeta(cp)}`,
      send: async (points, reason) => {
        const sent = offsets(points);
        await this.#via!.commitOffsets(sent);
        o.logger.debug({ reason, offsets: sent }, 'kafka: committed');
      },
      onFailed: (err, reason) => o.logger.warn({ reason, err }, 'kafka: commit failed; the next one retries'),
    });
  }

  /** Queues a commit of every held partition's safe point; resolves once it was sent (or failed, logged). */
  commit(reason: CommitReason): Promise<void> {
    return this.#commits.commit(reason);
  }

  /** The point of each held partition that has one; null when there is nothing to commit through or the store could not be read. */
  async #points(): Promise<Array<[Held, CommitPoint]> | null> {
    this.#via = this.#o.consumer();
    if (this.#via === null || this.#o.from === 'none') return null;
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
