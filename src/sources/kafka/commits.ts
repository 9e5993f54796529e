// Commits of the engine's safe points: per held partition, the offset the engine says may be
// committed (the oldest position still feeding an open window) with the emitted-window boundary as
// metadata, so a restart replays exactly the open windows' input and skips what was emitted. Never
// more than the engine's point; one commit at a time, in call order; an unchanged point is not sent
// again.
import type { Consumer } from 'kafkajs';
import type { Logger } from 'pino';
import { formatCommitMeta } from '../../commit/meta.js';
import type { Engine } from '../../engine/index.js';
import type { Metrics } from '../../metrics/index.js';
import type { Held } from './assignment.js';

export type CommitReason = 'interval' | 'rebalance' | 'shutdown';

export interface CommitterOptions {
  readonly engine: Pick<Engine, 'commitPoint'>;
  readonly metrics: Pick<Metrics, 'commits' | 'commitSeconds'>;
  readonly logger: Logger;
  /** The consumer of the current session (null between sessions: nothing to commit through). */
  readonly consumer: () => Pick<Consumer, 'commitOffsets'> | null;
  /** The partitions held now. */
  readonly held: () => Iterable<Held>;
  /**
   * False when a sink stores positions itself, with its rows (PostgreSQL: in its table; Kafka
   * exactly-once: in its transactions, to this very group). Committing here too would race with it:
   * the broker keeps the offset commit appended last to __consumer_offsets, and a transaction's
   * offsets are appended before it commits, so a plain commit of an older point sent meanwhile wins,
   * and the next owner emits windows again.
   */
  readonly enabled: boolean;
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
    if (consumer === null || !this.#o.enabled) return;
    const { engine, metrics, logger } = this.#o;
    const offsets: Array<{ topic: string; partition: number; offset: string; metadata: string }> = [];
    const sent: Array<[Held, string]> = [];
    for (const h of this.#o.held()) {
      const cp = engine.commitPoint(h.id);
      if (cp === null) continue;
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
}
