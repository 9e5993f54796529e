// Committing lanes' points, the part every source with lanes shares (Kafka, Redis): one commit at a
// time, in call order; per lane the point it names now, and an unchanged point is not sent again;
// streamstats_commits_total and the commit time counted the same way. Where the points come from and
// how they are sent is the source's: a Kafka OffsetCommit with the point as metadata, a Redis hash
// write followed by XACKs below the point.
import type { Logger } from 'pino';
import type { CommitPoint } from '../../commit/types.js';
import type { Metrics } from '../../metrics/index.js';

export type CommitReason = 'interval' | 'rebalance' | 'shutdown';

export interface LaneCommitsOptions<L> {
  readonly metrics: Pick<Metrics, 'commits' | 'commitSeconds'>;
  readonly logger: Logger;
  /** The point of each lane that has one now; null: nothing to commit this time (no session, or the points could not be read). */
  readonly points: () => Promise<ReadonlyArray<readonly [L, CommitPoint]> | null>;
  /** What a point is as sent for its lane: a lane whose mark is the one sent last is skipped. */
  readonly mark: (lane: L, point: CommitPoint) => string;
  /** Sends points; rejects when that failed (the next commit sends them again). */
  readonly send: (points: ReadonlyArray<readonly [L, CommitPoint]>, reason: CommitReason) => Promise<void>;
  /** 'together' (default): one send for every lane (Kafka: one OffsetCommit request); 'each': one per lane, so a failure costs that lane only. */
  readonly per?: 'together' | 'each';
  readonly onFailed: (err: unknown, reason: CommitReason, points: ReadonlyArray<readonly [L, CommitPoint]>) => void;
}

export class LaneCommits<L extends object> {
  readonly #o: LaneCommitsOptions<L>;
  #chain: Promise<void> = Promise.resolve();
  /** The mark last sent per lane; gone with the lane. */
  readonly #last = new WeakMap<L, string>();

  constructor(o: LaneCommitsOptions<L>) {
    this.#o = o;
  }

  /** Queues a commit of every lane's point; resolves once it was sent (or failed, reported). */
  commit(reason: CommitReason): Promise<void> {
    this.#chain = this.#chain.then(() => this.#commitNow(reason));
    return this.#chain;
  }

  async #commitNow(reason: CommitReason): Promise<void> {
    const points = await this.#o.points();
    if (points === null) return;
    const changed: Array<[L, CommitPoint, string]> = [];
    for (const [lane, cp] of points) {
      const mark = this.#o.mark(lane, cp);
      if (mark !== this.#last.get(lane)) changed.push([lane, cp, mark]);
    }
    if (changed.length === 0) return;
    if (this.#o.per === 'each') for (const c of changed) await this.#send([c], reason);
    else await this.#send(changed, reason);
  }

  async #send(items: ReadonlyArray<readonly [L, CommitPoint, string]>, reason: CommitReason): Promise<void> {
    const { metrics } = this.#o;
    const points = items.map(([lane, cp]) => [lane, cp] as const);
    const end = metrics.commitSeconds.startTimer();
    try {
      await this.#o.send(points, reason);
      end();
      metrics.commits.inc({ result: 'ok' });
      for (const [lane, , mark] of items) this.#last.set(lane, mark);
    } catch (err) {
      metrics.commits.inc({ result: 'error' });
      this.#o.onFailed(err, reason, points);
    }
  }
}
