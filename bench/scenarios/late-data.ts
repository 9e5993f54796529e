// Late data: what amending costs. The same points twice, once in event-time order and once with 1 %
// of them held back by ten minutes (ten windows: long after their window closed, well within the
// amend horizon), each read with LATE_RECORDS=dead-letter and =amend, alternated. The cost of an
// amendment per late record is the CPU (and the rows written) the held-back points add to an amend
// run over the punctual amend run, divided by the late records; dead-lettering them is priced the
// same way. The newest revision per identity of the late amend run must equal the punctual run's
// rows: an amendment that is cheap because it is wrong would not count.
import { createWriteStream, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { prng } from '../../src/sources/generator.js';
import { scratchDir } from '../lib/child.js';
import { alternate, variantTable, type Variant, type VariantResult } from '../lib/measure.js';
import { fmt } from '../lib/stats.js';
import { ROOT, variant, type Scenario } from '../lib/scenario.js';
import { timedCli } from '../lib/timed.js';

const METRICS = 40;
const HOSTS = 25;
const INTERVAL_MS = 10_000;
const DELAY_MS = 600_000;
const LATE_SHARE = 0.01;
const START_MS = Date.UTC(2024, 2, 1);

interface Inputs {
  readonly punctual: string;
  readonly late: string;
  readonly held: number;
}

/** Both input files, written in one pass: a held point goes into the late file once its due time comes. */
export async function writeInputs(dir: string, records: number): Promise<Inputs> {
  const rand = prng(25);
  const punctual = createWriteStream(join(dir, 'punctual.ndjson'));
  const late = createWriteStream(join(dir, 'late.ndjson'));
  const waiting: Array<{ dueMs: number; line: string }> = [];
  let held = 0;
  let chunkP = '';
  let chunkL = '';
  const flush = async (force: boolean): Promise<void> => {
    if (!force && chunkP.length < 1 << 20) return;
    if (!punctual.write(chunkP)) await once(punctual, 'drain');
    if (!late.write(chunkL)) await once(late, 'drain');
    chunkP = '';
    chunkL = '';
  };
  const series = METRICS * HOSTS;
  // Only points whose due time comes before the input ends are held: each then arrives among points
  // ten minutes newer, so its window has closed, and the dead-letter run must reject every one.
  const lastTs = START_MS + Math.floor((records - 1) / series) * INTERVAL_MS;
  for (let i = 0; i < records; i++) {
    const ts = START_MS + Math.floor(i / series) * INTERVAL_MS + (i % series);
    while (waiting.length > 0 && waiting[0]!.dueMs <= ts) chunkL += waiting.shift()!.line;
    const m = i % METRICS;
    const h = Math.floor(i / METRICS) % HOSTS;
    const line = `${JSON.stringify({ metric: { name: `late.bench.${m}`, dimensions: { hostname: `host-${h}` }, timestamp: ts, value: Math.round(rand() * 1e6) / 100 }, meta: { tenantId: 't1', region: 'r1' } })}\n`;
    chunkP += line;
    if (rand() < LATE_SHARE && ts + DELAY_MS < lastTs) {
      waiting.push({ dueMs: ts + DELAY_MS, line });
      held++;
    } else {
      chunkL += line;
    }
    await flush(false);
  }
  for (const w of waiting) chunkL += w.line;
  await flush(true);
  punctual.end();
  late.end();
  await Promise.all([once(punctual, 'finish'), once(late, 'finish')]);
  return { punctual: join(dir, 'punctual.ndjson'), late: join(dir, 'late.ndjson'), held };
}

interface Row {
  readonly name: string;
  readonly groupby: Record<string, string>;
  readonly period_start: string;
  readonly count: number;
  readonly sum: number;
  readonly revision?: number;
}

function readRows(path: string): Row[] {
  return readFileSync(path, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Row);
}

/** The highest revision per identity, as a reader of appended revisions keeps them. */
function newest(rows: readonly Row[]): Map<string, Row> {
  const m = new Map<string, Row>();
  for (const r of rows) {
    const k = `${r.name}|${JSON.stringify(r.groupby)}|${r.period_start}`;
    const had = m.get(k);
    if (had === undefined || (r.revision ?? 0) >= (had.revision ?? 0)) m.set(k, r);
  }
  return m;
}

export const lateDataScenario: Scenario = {
  id: 'late-data',
  order: 9,
  title: 'Scenario 9: late data, amended or dead-lettered (1 % of the points ten minutes late)',
  async run(ctx) {
    const records = ctx.mode === 'full' ? 2_000_000 : 400_000;
    const scratch = scratchDir('late-data');
    try {
      const inputs = await writeInputs(scratch.dir, records);
      ctx.log(`  late-data: ${fmt.int(records)} points, ${fmt.int(inputs.held)} of them held back ${DELAY_MS / 60_000} minutes`);
      const common = { WINDOW_SECONDS: '60', ALLOWED_LATENESS_SECONDS: '5', AMEND_HORIZON_SECONDS: '3600', WORKER_THREADS: 'auto' };
      const out = (id: string) => join(scratch.dir, `${id}.ndjson`);
      const mk = (id: string, label: string, file: string, late: 'dead-letter' | 'amend'): Variant => {
        const vars = { ...common, SOURCE: `file:${file}`, LATE_RECORDS: late };
        return {
          id,
          label,
          config: { ...vars, SOURCE: file === inputs.late ? 'file:late.ndjson' : 'file:punctual.ndjson' },
          run: async () => {
            const { t, summary } = await timedCli(ROOT, vars, scratch.dir, out(id));
            const done = JSON.parse(t.stderr.split('\n').find((l) => l.includes('"msg":"done"'))!) as { summary: { rejected: Record<string, number> } };
            const lateN = done.summary.rejected['late'] ?? 0;
            const rows = readRows(out(id));
            return {
              recordsPerSecond: summary.recordsPerSecond,
              elapsedSeconds: summary.elapsedSeconds,
              peakRssBytes: t.maxRssBytes,
              extra: {
                cpuSeconds: t.cpuSeconds,
                cpuUsPerRecord: (t.cpuSeconds * 1e6) / records,
                mainUs: ((t.threads['MAIN'] ?? 0) * 1e6) / records,
                rowsWritten: rows.length,
                amendedRows: rows.filter((r) => (r.revision ?? 0) > 0).length,
                deadLetteredLate: lateN,
                ok: summary.ok,
              },
            };
          },
        };
      };
      const variants = [
        mk('punctual-dl', 'punctual, LATE_RECORDS=dead-letter', inputs.punctual, 'dead-letter'),
        mk('late-dl', '1 % late, LATE_RECORDS=dead-letter', inputs.late, 'dead-letter'),
        mk('punctual-amend', 'punctual, LATE_RECORDS=amend', inputs.punctual, 'amend'),
        mk('late-amend', '1 % late, LATE_RECORDS=amend', inputs.late, 'amend'),
      ];
      const results = await alternate('late-data', variants, ctx.protocol, ctx.log);
      const group = { id: 'late-data', title: 'Late data', variants: results, baseline: 'punctual-dl' };
      const v = (id: string): VariantResult => variant(group, id);
      const med = (r: VariantResult, k: string): number => r.extra[k]?.median ?? NaN;

      // The outputs of the last round: amended, the newest revisions are the punctual run's rows.
      const want = newest(readRows(out('punctual-amend')));
      const got = newest(readRows(out('late-amend')));
      let differ = 0;
      for (const [k, w] of want) {
        const g = got.get(k);
        if (g === undefined || g.count !== w.count || Math.abs(g.sum - w.sum) > 1e-9 * Math.max(1, Math.abs(w.sum))) differ++;
      }
      if (differ > 0 || got.size !== want.size) throw new Error(`late-data: ${differ} of ${want.size} windows differ from the punctual run after amending (${got.size} identities)`);
      const lateDl = med(v('late-dl'), 'deadLetteredLate');
      if (med(v('late-amend'), 'deadLetteredLate') !== 0) throw new Error('late-data: the amend run dead-lettered late records');
      if (lateDl !== inputs.held) throw new Error(`late-data: dead-letter run: ${lateDl} late of ${inputs.held} held back`);

      const per = (a: string, b: string, k: string, scale: number): number => ((med(v(a), k) - med(v(b), k)) * scale) / inputs.held;
      const amendUs = per('late-amend', 'punctual-amend', 'cpuSeconds', 1e6);
      const dlUs = per('late-dl', 'punctual-dl', 'cpuSeconds', 1e6);
      const rowsPerLate = per('late-amend', 'punctual-amend', 'rowsWritten', 1);
      const lateRatio = v('late-amend').recordsPerSecond.median / v('punctual-amend').recordsPerSecond.median;
      const amendIdle = v('punctual-amend').recordsPerSecond.median / v('punctual-dl').recordsPerSecond.median;
      const cpuTable = [
        '| variant | CPU us a record (median) | main thread us a record | rows written | amended rows | dead-lettered as late |',
        '|---|---:|---:|---:|---:|---:|',
        ...results.map((r) => `| ${r.label} | ${med(r, 'cpuUsPerRecord').toFixed(2)} | ${med(r, 'mainUs').toFixed(2)} | ${fmt.int(med(r, 'rowsWritten'))} | ${fmt.int(med(r, 'amendedRows'))} | ${fmt.int(med(r, 'deadLetteredLate'))} |`),
      ].join('\n');
      const markdown = [
        `## ${this.title}`,
        '',
        `Input: ${fmt.int(records)} Monasca points, ${METRICS} metrics x ${HOSTS} hosts (${fmt.int(METRICS * HOSTS)} series), one point a series every ${INTERVAL_MS / 1000} s, ` +
          `read from a file twice: in event-time order, and with ${fmt.int(inputs.held)} points (${(LATE_SHARE * 100).toFixed(0)} %, chosen by a seeded generator) delivered ${DELAY_MS / 60_000} minutes ` +
          `of event time later, long after their window closed (\`WINDOW_SECONDS=60 ALLOWED_LATENESS_SECONDS=5 AMEND_HORIZON_SECONDS=3600 WORKER_THREADS=auto\`, rows to a file). ` +
          'Each input is read with `LATE_RECORDS=dead-letter` and with `LATE_RECORDS=amend`, the four alternated. ' +
          `Checked: the late amend run's newest revision per identity equals the punctual run's rows (all ${fmt.int(want.size)} windows), and the dead-letter run dead-lettered exactly the held-back points.`,
        '',
        variantTable(results, v('punctual-dl')),
        '',
        cpuTable,
        '',
        `**Cost of an amendment:** ${amendUs.toFixed(1)} us of CPU and ${rowsPerLate.toFixed(2)} rows written per late record (late amend run over the punctual amend run); ` +
          `dead-lettering a late record costs ${dlUs.toFixed(1)} us (late dead-letter run over the punctual one: its dead letter is built from the record's bytes and written). ` +
          `With 1 % late records an amend run goes at ${fmt.ratio(lateRatio)} the punctual amend run's records/s; keeping closed windows for amendment costs a punctual run ${fmt.ratio(amendIdle)} of the dead-letter run's rate. ` +
          'Per-record differences of whole runs are small against run-to-run noise on a shared machine: read them with the spread of the table above.',
        '',
      ].join('\n');
      return {
        config: { ...common, records, metrics: METRICS, hosts: HOSTS, intervalSeconds: INTERVAL_MS / 1000, delaySeconds: DELAY_MS / 1000, lateShare: LATE_SHARE, held: inputs.held },
        groups: [group],
        markdown,
        headline: [
          `late-data ${fmt.int(records)}: amendment ${amendUs.toFixed(1)} us CPU and ${rowsPerLate.toFixed(2)} rows per late record (dead-letter ${dlUs.toFixed(1)} us); 1 % late amend ${fmt.ratio(lateRatio)} punctual amend; punctual amend ${fmt.ratio(amendIdle)} dead-letter`,
        ],
      };
    } finally {
      scratch.remove();
    }
  },
};
