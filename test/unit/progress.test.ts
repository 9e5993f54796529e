// The busy clock and the progress line of an endless source (src/progress.ts), and the summary lines
// they feed (src/pipeline.ts formatSummary).
import t from 'tap';
import { formatSummary, type Summary } from '../../src/pipeline.js';
import { BusyClock, endlessProgressLine } from '../../src/progress.js';

t.test('busy time: only the stretches in which records moved on or work was in flight', async (t) => {
  const c = new BusyClock(0);
  c.sample(100, 0, 0);
  c.sample(200, 0, 2);
  c.sample(300, 500, 0);
  c.sample(400, 500, 0);
  c.sample(10_000, 500, 0);
  c.sample(10_100, 900, 0);
  t.equal(c.busySeconds, 0.3, 'idle 9.7 s of 10.1 s');
});

t.test('the progress line: records, rate, lag (unknown as ?), lanes', async (t) => {
  t.equal(endlessProgressLine({ records: 1_234_567, rate: 85_000.4, lag: 12_345, lanes: 4 }), 'records 1,234,567 | 85,000 records/s | lag 12,345 | lanes 4');
  t.equal(endlessProgressLine({ records: 0, rate: 0, lag: null, lanes: 0 }), 'records 0 | 0 records/s | lag ? | lanes 0');
});

const summary = (over: Partial<Summary>): Summary => ({
  messages: 690_000, records: 690_000, ok: 689_000, rejected: {}, rows: 1, batches: 173, decodeSeconds: 1, poisonedBatches: 0, replayed: 1000,
  source: 'kafka:metrics', threads: 1, elapsedSeconds: 88, recordsPerSecond: 86_250, peakRssBytes: 1, deadLetter: 'x', sink: 'y', stopped: true,
  unbounded: true, busySeconds: 8, lagAtStop: 0, ...over,
});

t.test('the summary of an endless source: replayed, busy time, records/s while busy, lag at stop', async (t) => {
  const s = formatSummary(summary({}));
  t.match(s, /records {6}690,000: ok 689,000, rejected 0, replayed 1,000/);
  t.match(s, /elapsed {6}88\.00 s \(busy 8\.00 s\)/);
  t.match(s, /throughput {3}86,250 records\/s while busy, with 1 worker thread/);
  t.match(s, /lag at stop {2}0 messages/);
  t.match(formatSummary(summary({ lagAtStop: null })), /lag at stop {2}unknown/);
  const file = formatSummary(summary({ unbounded: false, replayed: 0 }));
  t.notMatch(file, /replayed|busy|lag at stop/, 'a finite input: none of these');
});
