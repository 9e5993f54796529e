// The exactly-once restore's read of committed positions without a broker: a fake admin answers
// fetchOffsets (not through kafkajs's protocol, so no read is a stable one: the fallback for brokers
// before Kafka 2.5 reads until the answer holds still), and UNSTABLE_OFFSET_COMMIT answers are retried.
// The stable read against a real broker: test/integration/kafka-stable-offsets.test.ts.
import type { Admin } from 'kafkajs';
import t from 'tap';
import { formatCommitMeta } from '../../src/commit/meta.js';
import type { ProducerSet } from '../../src/kafka/producer.js';
import { readPositions } from '../../src/sinks/kafka/positions.js';

const TOPIC = 'in';

function answer(offset: number) {
  return [{ topic: TOPIC, partitions: [{ partition: 0, offset: String(offset), metadata: formatCommitMeta({ position: offset, watermarkMs: offset, appliedEnd: offset + 1 }) }] }];
}

/** fetchOffsets answers (or throws) each of `script` in turn, then repeats the last one. */
function fakes(script: ReadonlyArray<number | Error>) {
  const renewed: string[] = [];
  let reads = 0;
  const admin = {
    fetchOffsets: async () => {
      const step = script[Math.min(reads++, script.length - 1)]!;
      if (step instanceof Error) throw step;
      return answer(step);
    },
  } as unknown as Admin;
  const producers = { renew: async (id: string) => void renewed.push(id) } as unknown as ProducerSet;
  return { c: { groupId: 'g', producers, admin: async () => admin, transactionTimeoutMs: 60_000 }, renewed, reads: () => reads };
}

const unstable = () => Object.assign(new Error('There are unstable offsets that need to be cleared'), { type: 'UNSTABLE_OFFSET_COMMIT', code: 88 });

t.test('without a stable read: read until the answer holds still, and use the last one', async (t) => {
  const f = fakes([10, 10, 20, 30]);
  const started = Date.now();
  const pos = await readPositions(f.c, TOPIC, [0]);
  t.same(f.renewed, ['g.in.0'], 'the partition\'s transactional id was claimed first');
  t.same(pos.get(0), { position: 30, watermarkMs: 30, appliedEnd: 31 }, 'the answer after the last change');
  t.ok(f.reads() >= 6, `read again after the change until it held (${f.reads()} reads)`);
  t.ok(Date.now() - started >= 1000, 'held still for a second before it was used');
});

t.test('UNSTABLE_OFFSET_COMMIT is asked again; another error fails the read at once', async (t) => {
  const f = fakes([unstable(), unstable(), 40]);
  const pos = await readPositions(f.c, TOPIC, [0]);
  t.same(pos.get(0), { position: 40, watermarkMs: 40, appliedEnd: 41 }, 'the offsets once no transaction held them');

  const g = fakes([new Error('broker gone')]);
  await t.rejects(readPositions(g.c, TOPIC, [0]), /broker gone/);
  t.equal(g.reads(), 1, 'not retried');
});
