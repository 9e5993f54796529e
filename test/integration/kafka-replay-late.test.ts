// Against a real Kafka broker: a restart replays from the commit point, and the replayed records of
// windows already emitted fall behind the restored watermark. They are skipped and counted as
// replayed: no "most records of a batch are late" warning, and the summary adds up.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { startEngineProcess, until, type EngineProcess } from '../fixtures/engine-process.js';
import { monascaRecord } from '../fixtures/gen.js';
import { brokers, client, createTopic, produce, startEngine, uid, waitFor, type Engine } from '../fixtures/kafka.js';
import { differences, newestRevisions, outageLine, outageWorkload } from '../fixtures/outage.js';

const EXITING_LANE_WORKER = fileURLToPath(new URL('../fixtures/exiting-lane-worker.js', import.meta.url));

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

// LANE_STATE=worker with LATE_RECORDS=amend: the kept windows live in the lane's owner. A restart in
// the middle of an outage's backlog rebuilds them there from the replay (silently: the commit point's
// applied end and keptFromMs say what was processed and kept), and the new records amend them: the
// rows of both runs are byte for byte those of LANE_STATE=main, given the same input in the same
// batches (one topic, a group per mode).
t.test('LANE_STATE=worker, amend: stopped mid-backlog and restarted, the rows are byte-identical to LANE_STATE=main\'s', async (t) => {
  const { arrival, held, backlogAt } = outageWorkload(11, 3, 2);
  const topic = await createTopic(t, 1);
  const messages = arrival.map((p) => ({ key: `${p.name}|${p.host}`, value: outageLine(p) }));
  // The stop lands halfway through agent-b's backlog: some kept windows amended already, some not
  // yet. Not on a batch boundary (BATCH_SIZE=40): the restart's batch that holds it is partly replay,
  // partly new, and is applied as its two parts.
  const cut = backlogAt + Math.floor(held / 2) + 7;
  const groups = { main: uid('g-main'), worker: uid('g-worker') };
  const dirs = { main: join(t.testdir(), 'main'), worker: join(t.testdir(), 'worker') };
  for (const d of Object.values(dirs)) mkdirSync(d);
  const env = (mode: 'main' | 'worker') => ({
    KAFKA_TOPICS: topic,
    KAFKA_GROUP_ID: groups[mode],
    LANE_STATE: mode,
    WORKER_THREADS: '1',
    BATCH_SIZE: '40',
    WINDOW_SECONDS: '60',
    ALLOWED_LATENESS_SECONDS: '5',
    LATE_RECORDS: 'amend',
    AMEND_HORIZON_SECONDS: '10800',
    // Event times of 2024: an idle flush (the wall clock) would close every window as late.
    IDLE_FLUSH_SECONDS: '3600',
  });
  const seen = (e: Engine) => e.sum('streamstats_records_total') + e.metric('streamstats_replayed_records_total');
  const run = async (mode: 'main' | 'worker', n: number): Promise<{ replayed: number; amended: number }> => {
    const e = startEngine(t, env(mode), { dir: dirs[mode] });
    await waitFor([e], () => seen(e) >= n && e.sum('streamstats_consumer_lag_messages') === 0, `${mode}: ${n} records applied`);
    const figures = { replayed: e.metric('streamstats_replayed_records_total'), amended: e.metric('streamstats_late_records_total', { outcome: 'amended' }) };
    await e.stop();
    return figures;
  };
  await produce(topic, messages.slice(0, cut));
  const first = { main: await run('main', cut), worker: await run('worker', cut) };
  t.ok(first.main.amended > 0, `first run: ${first.main.amended} late records amended before the stop`);
  t.same(first.worker, first.main, 'first run: the same replayed and amended counts');
  t.equal(readFileSync(join(dirs.worker, 'rows.ndjson'), 'utf8'), readFileSync(join(dirs.main, 'rows.ndjson'), 'utf8'), 'first run: the same row bytes');
  await produce(topic, messages.slice(cut));
  // The restart reads from the committed offset: every message from there on is applied or skipped as replayed.
  const committed = async (group: string): Promise<number> => {
    const admin = client().admin();
    await admin.connect();
    try {
      const [res] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
      return Number(res?.partitions[0]?.offset ?? 0);
    } finally {
      await admin.disconnect();
    }
  };
  const from = { main: await committed(groups.main), worker: await committed(groups.worker) };
  t.equal(from.worker, from.main, `the same commit point (offset ${from.main}), before the first kept window's first record`);
  t.ok(from.main < backlogAt, 'the point is behind the backlog: the kept windows are replayed');
  const second = { main: await run('main', messages.length - from.main), worker: await run('worker', messages.length - from.worker) };
  t.ok(second.main.replayed > 0 && second.main.amended > 0, `the restart replayed ${second.main.replayed} records (rebuilding the kept windows) and amended ${second.main.amended}`);
  t.same(second.worker, second.main, 'restart: the same replayed and amended counts');
  const rows = { main: readFileSync(join(dirs.main, 'rows.ndjson'), 'utf8'), worker: readFileSync(join(dirs.worker, 'rows.ndjson'), 'utf8') };
  t.ok(rows.main.includes('"closed_by":"amended"'), 'the rows hold amended revisions');
  t.equal(rows.worker, rows.main, 'both runs: the same row bytes, revisions included');
  for (const [mode, d] of Object.entries(dirs)) t.notOk(existsSync(join(d, 'dlq.ndjson')) && readFileSync(join(d, 'dlq.ndjson'), 'utf8').trim() !== '', `${mode}: nothing dead-lettered (replays are not late)`);
});

/**
 * A gauge once it stopped moving (the same on three polls 300 ms apart): caught up, the owners still
 * close windows and report their state on their own schedule, so one read right after can catch it
 * between two reports.
 */
async function settled(e: Engine, name: string): Promise<number> {
  let last = NaN;
  let same = 0;
  for (let i = 0; i < 100 && same < 2; i++) {
    await new Promise((r) => setTimeout(r, 300));
    await e.refresh();
    const v = e.metric(name);
    same = v === last ? same + 1 : 0;
    last = v;
  }
  return last;
}

t.test('LANE_STATE=worker, amend: an owner that dies mid-backlog takes its kept windows; the lane is rebuilt by replay and the newest revisions equal an undisturbed run\'s', async (t) => {
  const { arrival, held, backlogAt } = outageWorkload(11, 3, 2);
  const topic = await createTopic(t, 1);
  const messages = arrival.map((p) => ({ key: `${p.name}|${p.host}`, value: outageLine(p) }));
  // The owner dies halfway through agent-b's backlog, with windows kept and some amended already.
  messages.splice(backlogAt + Math.floor(held / 2), 0, { key: 'x', value: '"exit"' });
  await produce(topic, messages);
  const marker = join(t.testdir(), 'died');
  process.env['STREAMSTATS_TEST_EXIT_ONCE'] = marker;
  t.teardown(() => {
    delete process.env['STREAMSTATS_TEST_EXIT_ONCE'];
  });
  const env = { KAFKA_TOPICS: topic, BATCH_SIZE: '40', COMMIT_INTERVAL_SECONDS: '0.2', WINDOW_SECONDS: '60', ALLOWED_LATENESS_SECONDS: '5', LATE_RECORDS: 'amend', AMEND_HORIZON_SECONDS: '10800', IDLE_FLUSH_SECONDS: '3600' };
  const seen = (e: Engine) => e.sum('streamstats_records_total') + e.metric('streamstats_replayed_records_total');
  const e = startEngine(t, { ...env, KAFKA_GROUP_ID: uid('g-rebuild'), LANE_STATE: 'worker', WORKER_THREADS: '1' }, { workerFile: EXITING_LANE_WORKER });
  await waitFor([e], () => e.metric('streamstats_lane_rebuilds_total') >= 1 && seen(e) >= messages.length && e.sum('streamstats_consumer_lag_messages') === 0, 'the lost lane was rebuilt and caught up');
  t.ok(existsSync(marker), 'the owner did die');
  t.equal(e.metric('streamstats_lane_rebuilds_total'), 1, 'one rebuild');
  t.ok(e.metric('streamstats_replayed_records_total') > 0, 'the replay rebuilt the kept windows silently (replayed records)');
  // Read once the state settled: "caught up" counts replayed records beside applied ones, so it can
  // hold while the last replies (and their amendments) are still being counted.
  const stateBytes = await settled(e, 'streamstats_state_bytes');
  const amended = e.metric('streamstats_late_records_total', { outcome: 'amended' });
  await e.stop();
  const reference = startEngine(t, { ...env, KAFKA_GROUP_ID: uid('g-ref'), LANE_STATE: 'main', WORKER_THREADS: '1' });
  await waitFor([reference], () => seen(reference) >= messages.length && reference.sum('streamstats_consumer_lag_messages') === 0, 'the reference caught up');
  const referenceBytes = await settled(reference, 'streamstats_state_bytes');
  await reference.stop();
  // The dead owner's open series and kept windows left the shared budget with it: what is counted is the rebuilt lane's.
  t.ok(referenceBytes > 0 && e.metric('streamstats_amend_kept_windows') > 0, `state counted (${referenceBytes} bytes)`);
  t.equal(stateBytes, referenceBytes, 'MAX_STATE_MB counts what the undisturbed run counts: nothing of the lost owner\'s state');
  t.equal(amended, held, 'every held-back point amended once: those before the loss are rebuilt silently by the replay, not amended again');
  const got = newestRevisions(e.rows());
  const want = newestRevisions(reference.rows());
  t.ok(want.size > 500 && [...want.values()].some((r) => r.closed_by === 'amended'), `${want.size} identities in the undisturbed run, amended ones among them`);
  t.same([...got.keys()].sort(), [...want.keys()].sort(), 'the same identities');
  t.same(differences(got, want), [], 'the newest revision of every identity has the statistics of the undisturbed run');
  t.same([...want.keys()].map((k) => got.get(k)?.closed_by), [...want.values()].map((r) => r.closed_by), 'each closed as it was there (amended where it was amended)');
  t.same(e.deadLetters().map((d) => d.reason), reference.deadLetters().map((d) => d.reason), 'the same dead letters (the "exit" message once, nothing late)');
});
