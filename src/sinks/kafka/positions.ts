// Exactly-once restore: the input positions travel in the sink's transactions (as the group's
// committed offsets, with our metadata), so the Kafka source resumes from what this reads back.
import type { Admin } from 'kafkajs';
import { sleep } from '../../async/index.js';
import { parseCommitMeta } from '../../commit/meta.js';
import { StreamstatsError } from '../../errors.js';
import { isUnstableOffsets, stableOffsets } from '../../kafka/offset-fetch.js';
import type { ProducerSet } from '../../kafka/producer.js';
import type { CommitPoint } from '../../commit/types.js';
import { transactionalId } from './transactions.js';

/** Committed positions must read the same for this long before they are used. */
const STABLE_POSITIONS_MS = 1000;
/** Pause between two reads of the committed positions, and the most reads made. */
const POSITIONS_READ_INTERVAL_MS = 250;
const POSITIONS_MAX_READS = 20;
/** Pause before a stable read is asked again while a transaction still holds offsets (Java's retry.backoff.ms is 100). */
const UNSTABLE_RETRY_MS = 50;
/**
 * How long past the transaction timeout a stable read keeps being retried: the coordinator aborts a
 * transaction that outlived its timeout at its next check (transaction.abort.timed.out.transaction.cleanup.interval.ms,
 * 10 s by default), which clears whatever offsets it held.
 */
const UNSTABLE_GRACE_MS = 15_000;

type Positions = Map<number, CommitPoint>;

/**
 * Claims the input partitions (a fresh transactional producer for each, which fences the previous
 * owner and ends its open transaction), then reads the group's committed offsets and their metadata,
 * so a partition resumes after everything a zombie could still commit. Partitions without our
 * metadata are left out (the source then uses the group's commit as usual).
 */
export async function readPositions(
  c: { readonly groupId: string; readonly producers: ProducerSet; readonly admin: () => Promise<Admin>; readonly transactionTimeoutMs: number },
  topic: string,
  partitions: readonly number[],
): Promise<Positions> {
  if (partitions.length === 0) return new Map();
  await Promise.all(partitions.map((p) => c.producers.renew(transactionalId(c.groupId, topic, p))));
  const admin = await c.admin();
  const wanted = new Set(partitions);
  const read = async (): Promise<Positions> => {
    const m: Positions = new Map();
    for (const t of await admin.fetchOffsets({ groupId: c.groupId, topics: [topic] })) {
      for (const p of t.partitions) {
        const offset = Number(p.offset);
        const meta = parseCommitMeta(p.metadata);
        if (!wanted.has(p.partition) || offset < 0 || meta === null) continue;
        m.set(p.partition, { position: offset, ...meta });
      }
    }
    return m;
  };
  // The group coordinator applies a committed transaction's offsets a moment after its markers are
  // written (the fencing above ends the previous owner's transaction, its completion runs on the
  // coordinator's background scheduler): a plain read right after may still show the commit before.
  // A stable read (OffsetFetch v7, require_stable) is answered UNSTABLE_OFFSET_COMMIT until then.
  const deadline = Date.now() + c.transactionTimeoutMs + UNSTABLE_GRACE_MS;
  for (;;) {
    try {
      // The stable read, and still the wait for the answer to hold still: one full-suite run on
      // 5eb2a0d saw a window written twice after kill -9 (exactly-once.test) with the stable read
      // alone, cause not found; the wait is what every earlier run passed with.
      const { result } = await stableOffsets(read);
      return await steadyPositions(read, result);
    } catch (err) {
      if (!isUnstableOffsets(err)) throw err;
      if (Date.now() >= deadline) {
        throw new StreamstatsError('STREAMSTATS_SINK', `kafka sink: group ${c.groupId}'s committed offsets for ${topic} stayed held by an open transaction for ${c.transactionTimeoutMs + UNSTABLE_GRACE_MS} ms (the transaction timeout and ${UNSTABLE_GRACE_MS} ms more): another producer outside this sink's transactional ids is committing offsets for this group`, { cause: err });
      }
      await sleep(UNSTABLE_RETRY_MS);
    }
  }
}

/**
 * Read until the answer has not changed for STABLE_POSITIONS_MS (several reads), at most
 * POSITIONS_MAX_READS more reads: the only guard on a broker that cannot be asked for stable offsets
 * (before Kafka 2.5), and kept after a stable read too (see readPositions).
 */
async function steadyPositions(read: () => Promise<Positions>, first: Positions): Promise<Positions> {
  let last = first;
  let stableSince = Date.now();
  for (let i = 0; i < POSITIONS_MAX_READS && Date.now() - stableSince < STABLE_POSITIONS_MS; i++) {
    await sleep(POSITIONS_READ_INTERVAL_MS);
    const next = await read();
    if (!samePositions(next, last)) stableSince = Date.now();
    last = next;
  }
  return last;
}

function samePositions(a: Positions, b: Positions): boolean {
  return a.size === b.size && [...a].every(([p, v]) => {
    const o = b.get(p);
    return o !== undefined && o.position === v.position && o.appliedEnd === v.appliedEnd;
  });
}
