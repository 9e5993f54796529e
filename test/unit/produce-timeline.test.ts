// Where a demo producer's timeline starts when GEN_START is unset (src/tools/timeline.ts).
import t from 'tap';
import { ConfigError } from '../../src/errors.js';
import { timelineStart } from '../../src/tools/timeline.js';

const NOW = Date.parse('2026-03-01T12:00:00.400Z');
const line = { stepMs: 30_000, steps: 172, jitterMs: 1000 };
const count = { name: 'GEN_COUNT', value: 690_000 };

t.test('an empty target: the timeline ends now, nothing in the future', async (t) => {
  const s = timelineStart(line, NOW, null, 86_400, count);
  t.equal(s.why, 'ends now (empty target)');
  t.ok(s.startMs + line.steps * line.stepMs + line.jitterMs <= NOW, 'the last point is at most now');
  t.ok(s.startMs + line.steps * line.stepMs + line.jitterMs > NOW - 1000, 'and within a second of it');
});

t.test('a used target: not before now, and after its newest point', async (t) => {
  const older = timelineStart(line, NOW, NOW - 3_600_000, 86_400, count);
  t.equal(older.why, 'starts now');
  t.equal(older.startMs, Date.parse('2026-03-01T12:00:01Z'), 'the next whole second');
  const ahead = timelineStart(line, NOW, NOW + 5_000_000, 86_400, count);
  t.equal(ahead.why, 'starts after the newest point');
  t.ok(ahead.startMs > NOW + 5_000_000 + line.jitterMs - 1, 'after the newest point and its round\'s jitter');
  const unreadable = timelineStart(line, NOW, 0, 86_400, count);
  t.equal(unreadable.why, 'starts now', 'held data, none readable: now');
});

t.test('a load that would end beyond MAX_FUTURE_SECONDS is refused, naming the count and the limit', async (t) => {
  let err: unknown = null;
  try {
    timelineStart(line, NOW, NOW + 86_000_000, 86_400, count);
  } catch (e) {
    err = e;
  }
  t.ok(err instanceof ConfigError, 'a ConfigError');
  t.match((err as Error).message, /^GEN_COUNT="690000" is not valid: .*MAX_FUTURE_SECONDS=86400.*set GEN_START$/);
  t.doesNotThrow(() => timelineStart(line, NOW, NOW + 86_000_000, 0, count), 'MAX_FUTURE_SECONDS=0: no limit');
});
