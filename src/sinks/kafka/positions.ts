// Exactly-once restore: the input positions travel in the sink's transactions (as the group's
// committed offsets, with our metadata), so the Kafka source resumes from what this reads back.
import type { Admin } from 'kafkajs';
import { sleep } from '../../async/index.js';
import { parseCommitMeta } from '../../commit/meta.js';
import type { ProducerSet } from '../../kafka/producer.js';
import type { CommitPoint } from '../../commit/types.js';
import { transactionalId } from './transactions.js';

/** Committed positions must read the same for this long before they are used. */
const STABLE_POSITIONS_MS = 1000;
/** Pause between two reads of the committed positions, and the most reads made. */
const POSITIONS_READ_INTERVAL_MS = 250;
const POSITIONS_MAX_READS = 20;

type Positions = Map<number, CommitPoint>;

/**
 * Claims the input partitions (a fresh transactional producer for each, which fences the previous
 * owner and ends its open transaction), then reads the group's committed offsets and their metadata,
 * so a partition resumes after everything a zombie could still commit. Partitions without our
 * metadata are left out (the source then uses the group's commit as usual).
 */
export async function readPositions(
  c: { readonly groupId: string; readonly producers: ProducerSet; readonly admin: () => Promise<Admin> },
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
  // written, and kafkajs's OffsetFetch cannot ask for stable offsets (require_stable, KIP-447): a
  // read right after the fencing above may still show the previous commit (the coordinator's
  // transaction completion runs on a background scheduler, slower on a loaded broker). Read until
  // the answer has not changed for STABLE_POSITIONS_MS (several reads), at most POSITIONS_MAX_READS
  // more reads. This is a mitigation, not a proof: only OffsetFetch v7+ (flexible versions, which
  // kafkajs cannot frame) can ask the coordinator to wait.
  let last = await read();
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
