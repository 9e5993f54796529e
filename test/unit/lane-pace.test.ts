// A caught-up lane's next read waits for its batch in the pool, and for no longer than the bound: a
// batch that never comes back must not hold the lane's reads.
import t from 'tap';
import { LanePace } from '../../src/sources/lanes/pace.js';
import type { LaneStatus } from '../../src/sources/types.js';

function host(pending: () => boolean) {
  const status = (): LaneStatus => ({ commitPoint: null, appliedEnd: null, oldestPendingMs: pending() ? 1 : null, lastAppliedTimestampMs: null, lastActivityMs: 0 });
  return { status };
}

t.test('caught up: a read that got fewer than it asked for, left nothing behind, and was not of entries behind', async (t) => {
  const pace = new LanePace(host(() => true), 1);
  t.equal(pace.wait(), null, 'no read yet: at once');
  for (const [read, caughtUp] of [
    [{ asked: 10, got: 10, more: false }, false],
    [{ asked: 10, got: 3, more: true }, false],
    [{ asked: 10, got: 3, more: false, behind: true }, false],
    [{ asked: 10, got: 3, more: false }, true],
    [{ asked: 10, got: 0, more: false }, true],
  ] as const) {
    pace.read(read);
    const paced = pace.wait();
    t.equal(paced !== null, caughtUp, JSON.stringify(read));
    pace.applied();
    await paced;
  }
});

t.test('a caught-up lane with nothing pending reads at once', async (t) => {
  const pace = new LanePace(host(() => false), 1);
  pace.read({ asked: 10, got: 1, more: false });
  t.equal(pace.wait(), null);
});

t.test('the wait ends when a batch is applied, else after the bound', async (t) => {
  const pace = new LanePace(host(() => true), 1, 50);
  pace.read({ asked: 10, got: 1, more: false });
  let start = Date.now();
  const woken = pace.wait()!;
  setTimeout(pace.applied, 5);
  await woken;
  t.ok(Date.now() - start < 45, `woken by applied (${Date.now() - start} ms)`);
  pace.applied();
  start = Date.now();
  await pace.wait();
  t.ok(Date.now() - start >= 45, `bounded (${Date.now() - start} ms); an applied before the wait does not end it`);
});
