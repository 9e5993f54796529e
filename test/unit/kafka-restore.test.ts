// Restore on join without a broker: the piece reads through two admin calls (fetchOffsets,
// fetchTopicOffsets) and a sink's readPositions; a small object answering those is its whole world.
import t from 'tap';
import pino from 'pino';
import { Signal } from '../../src/async/index.js';
import { formatCommitMeta } from '../../src/commit/meta.js';
import type { CommitPoint, LaneInit } from '../../src/commit/types.js';
import { Assignment, type Held } from '../../src/sources/kafka/assignment.js';
import { planRestore, readRestoreState, restore, type RestoreState } from '../../src/sources/kafka/restore.js';

const logger = pino({ level: 'silent' });
const TOPIC = 'm';

/** Partition 0 committed at 120 with our metadata, partition 1 never committed; ends 100..500. */
function admin(failFirst = 0) {
  let calls = 0;
  return {
    calls: () => calls,
    fetchOffsets: async ({ topics }: { groupId: string; topics?: string[] }) => {
      calls++;
      if (calls <= failFirst) throw new Error(`coordinator not available (${calls})`);
      return (topics ?? []).map((topic) => ({
        topic,
        partitions: [
          { partition: 0, offset: '120', metadata: formatCommitMeta({ position: 120, watermarkMs: 60_000, appliedEnd: 150 }) },
          { partition: 1, offset: '-1', metadata: null },
        ],
      }));
    },
    fetchTopicOffsets: async () => [0, 1].map((partition) => ({ partition, offset: '500', high: '500', low: '100' })),
  };
}

const state = (s: Partial<{ [K in keyof RestoreState]: RestoreState[K] }>): RestoreState => ({ committed: new Map(), ends: new Map(), stored: new Map(), ...s });

t.test('a committed offset restores the emitted boundary and replay point; no commit starts at KAFKA_FROM', async (t) => {
  const s = await readRestoreState([{ topic: TOPIC, partition: 0 }, { topic: TOPIC, partition: 1 }], { admin: admin(), groupId: 'g', from: 'earliest', logger });
  const p0 = planRestore({ topic: TOPIC, partition: 0 }, s, 'earliest');
  t.same(p0, { init: { identity: { topic: TOPIC, partition: 0 }, watermarkMs: 60_000, appliedEnd: 150 }, start: 120, hw: 500, seekTo: null, from: 'commit' });
  t.same(planRestore({ topic: TOPIC, partition: 1 }, s, 'earliest'), { init: { identity: { topic: TOPIC, partition: 1 } }, start: 100, hw: 500, seekTo: null, from: 'nothing' });
  t.equal(planRestore({ topic: TOPIC, partition: 1 }, s, 'latest').start, 500, 'latest: the high watermark');
  t.equal(planRestore({ topic: TOPIC, partition: 7 }, s, 'earliest').start, null, 'ends unknown: start unknown');
});

t.test('a sink\'s stored position wins over the group commit, and the first fetch seeks only when they differ', async (t) => {
  const pos: CommitPoint = { position: 130, watermarkMs: 70_000, appliedEnd: 140 };
  const committed = new Map([['m:0', { offset: 120, meta: null }], ['m:1', { offset: 130, meta: null }]]);
  const stored = new Map([['m:0', pos], ['m:1', pos]]);
  const s = state({ committed, stored });
  t.same(planRestore({ topic: TOPIC, partition: 0 }, s, 'earliest'), { init: { identity: { topic: TOPIC, partition: 0 }, watermarkMs: 70_000, appliedEnd: 140 }, start: 130, hw: null, seekTo: 130, from: 'sink' });
  t.equal(planRestore({ topic: TOPIC, partition: 1 }, s, 'earliest').seekTo, null, 'kafkajs starts there already');
  const read = await readRestoreState([{ topic: TOPIC, partition: 0 }], {
    admin: admin(), groupId: 'g', from: 'earliest', logger,
    positions: { readPositions: async (topic, parts) => new Map(parts.map((p) => [p, { ...pos, position: p + 1000 }])) },
  });
  t.equal(read.stored.get('m:0')?.position, 1000, 'read from the sink for the assigned partitions');
});

t.test('reading is retried: two failures, then the commit is used', async (t) => {
  const a = admin(2);
  const retries: number[] = [];
  const log = pino({ level: 'warn' }, { write: (line: string) => { if (/retrying/.test(line)) retries.push(JSON.parse(line).attempt as number); } });
  const s = await readRestoreState([{ topic: TOPIC, partition: 0 }], { admin: a, groupId: 'g', from: 'earliest', logger: log, baseDelayMs: 1 });
  t.equal(a.calls(), 3);
  t.same(retries, [1, 2], 'each failed attempt is logged with its number');
  t.equal(s.committed.get('m:0')?.offset, 120);
});

t.test('after 5 failed attempts the partitions start from nothing; a raised signal stops retrying', async (t) => {
  const a = admin(Infinity);
  const s = await readRestoreState([{ topic: TOPIC, partition: 0 }], { admin: a, groupId: 'g', from: 'earliest', logger, baseDelayMs: 1 });
  t.equal(a.calls(), 5);
  t.equal(s.committed.size + s.ends.size + s.stored.size, 0);
  const ended = new Signal();
  ended.raise();
  const b = admin(Infinity);
  await readRestoreState([{ topic: TOPIC, partition: 0 }], { admin: b, groupId: 'g', from: 'earliest', logger, baseDelayMs: 1, signal: ended });
  t.equal(b.calls(), 1, 'the session ended: no retry');
  const none = await readRestoreState([{ topic: TOPIC, partition: 0 }], { admin: null, groupId: 'g', from: 'earliest', logger });
  t.equal(none.committed.size, 0, 'no admin (session gone): nothing read');
});

t.test('restore opens each still-held partition in the engine from its plan and sets the seek', async (t) => {
  const table = new Assignment();
  const held = table.open([{ topic: TOPIC, partition: 0 }, { topic: TOPIC, partition: 1 }]) as [Held, Held];
  const opened: Array<[number, LaneInit]> = [];
  const plans: Array<[number, number | null]> = [];
  // Partition 1 is replaced (a new join) before the restore finishes: it must be left alone.
  const isCurrent = (h: Held) => h !== held[1];
  await restore(held, {
    admin: admin(), groupId: 'g', from: 'earliest', logger,
    positions: { readPositions: async () => new Map([[0, { position: 99, watermarkMs: 1, appliedEnd: 99 }]]) },
    lanes: { open: (id: number, init: LaneInit) => { opened.push([id, init]); } },
    isCurrent,
    onPlan: (h, plan) => plans.push([h.id, plan.start]),
  });
  t.same(opened, [[held[0].id, { identity: { topic: TOPIC, partition: 0 }, watermarkMs: 1, appliedEnd: 99 }]]);
  t.same(plans, [[held[0].id, 99]]);
  t.equal(held[0].seekTo, 99, 'the group committed 120, the sink stored 99: seek');
  t.equal(held[1].seekTo, null);
});
