// Against a real Kafka broker: a restart replays from the commit point, and the replayed records of
// windows already emitted fall behind the restored watermark. They are skipped and counted as
// replayed: no "most records of a batch are late" warning, and the summary adds up.
import t from 'tap';
import { startEngineProcess, until, type EngineProcess } from '../fixtures/engine-process.js';
import { monascaRecord } from '../fixtures/gen.js';
import { brokers, createTopic, produce, uid } from '../fixtures/kafka.js';

t.test('a restart that replays records of emitted windows warns of nothing late; the summary shows them replayed', async (t) => {
  const topic = await createTopic(t, 1);
  const group = uid('g');
  const dir = t.testdir();
  // One partition, three runs of 1,000 records: window [60 s, 120 s) opens, then [0, 60) gets records
  // within the lateness, then records at 100 s close [0, 60) and leave [60, 120) open. The commit
  // point is the first record (it feeds the open window), so a restart replays all 3,000, and the
  // middle 1,000 are behind the restored watermark: already emitted, replayed, not late.
  const base = Math.floor(Date.now() / 60_000) * 60_000 - 600_000;
  const run = (from: number, atS: number) => Array.from({ length: 1000 }, (_, i) => ({
    key: `k${i % 10}`,
    value: JSON.stringify(monascaRecord({ name: 'cpu', value: from + i, timestamp: base + atS * 1000 + (i % 10), dimensions: { host: `h${i % 10}` } })),
    partition: 0,
  }));
  await produce(topic, [...run(0, 61), ...run(1000, 58), ...run(2000, 100)]);
  const env = {
    SOURCE: 'kafka',
    KAFKA_BROKERS: brokers().join(','),
    KAFKA_TOPICS: topic,
    KAFKA_GROUP_ID: group,
    SINK: `file:${dir}/rows.ndjson`,
    DEAD_LETTER: `file:${dir}/dlq.ndjson`,
    WORKER_THREADS: '1',
    BATCH_SIZE: '1000',
    WATERMARK_CONFIRM_RECORDS: '1',
    // The open window stays open: the idle flush must not close it before the stop.
    IDLE_FLUSH_SECONDS: '3600',
  };
  const applied = (e: EngineProcess, n: number) => until(async () => {
    const m = await e.metrics();
    return m !== null && e.sum(m, 'streamstats_records_total') + (m.get('streamstats_replayed_records_total') ?? 0) >= n;
  }, `${n} records applied`);

  const first = await startEngineProcess(t, { ...env, PROGRESS: 'on' });
  await applied(first, 3000);
  // A progress line or two with the records applied, then the stop.
  await new Promise((r) => setTimeout(r, 2500));
  first.child.kill('SIGTERM');
  t.equal(await first.closed, 0, 'first run: clean exit');
  const out = first.stderr();
  t.match(out, /records\s+3,000: ok 3,000, rejected 0, replayed 0/, 'first run: nothing replayed');
  t.match(out, /\rrecords 3,000 \| [\d,]+ records\/s \| lag 0 \| lanes 1 /, 'PROGRESS=on: a progress line with the rate, the lag and the lanes');
  const busy = /elapsed\s+([\d.]+) s \(busy ([\d.]+) s\)/.exec(out);
  t.ok(busy !== null && Number(busy[2]) < Number(busy[1]), `the summary gives the busy time, less than the elapsed one: ${busy?.[0] ?? out.slice(-600)}`);
  t.match(out, /throughput\s+[\d,]+ records\/s while busy, with 1 worker thread/);
  t.match(out, /lag at stop  0 messages/, 'and the lag when it stopped');

  const second = await startEngineProcess(t, env);
  await applied(second, 3000);
  second.child.kill('SIGTERM');
  t.equal(await second.closed, 0, 'second run: clean exit');
  const err = second.stderr();
  t.match(err, /records\s+3,000: ok 2,000, rejected 0, replayed 1,000/, 'the summary adds up: ok + rejected + replayed');
  t.notMatch(err, /most records of a batch are late/, 'no late warning for replayed records');
  t.notMatch(err, /"late":\d/, 'nothing dead-lettered as late');
});
