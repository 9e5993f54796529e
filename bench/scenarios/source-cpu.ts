// CPU per record of a pull source alone (no engine): the file source over the 1M-sample Ceilometer
// file (bench/.cache/, made by bench/lib/ceilometer-data.ts) or the default generator (690,000
// points), for any built checkouts, alternated. Batches are released six behind, as the engine's
// pending bound would (Batch.release). CPU is process.cpuUsage (all threads: reads run on libuv's pool).
// Usage: node dist/bench/scenarios/source-cpu.js file|gen ROUNDS TREE...
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureCeilometerFile } from '../lib/ceilometer-data.js';
import { summarize } from '../lib/stats.js';

interface Measured {
  readonly records: number;
  readonly cpuUsPerRecord: number;
  readonly userUsPerRecord: number;
  readonly sysUsPerRecord: number;
}

interface SourceLike {
  batches(): AsyncIterable<{ offsets: Uint32Array; release?: () => void }>;
}

async function child(tree: string, kind: string, file: string): Promise<Measured> {
  let src: SourceLike;
  if (kind === 'file') {
    const { StreamSource } = (await import(join(tree, 'dist/src/sources/file.js'))) as { StreamSource: { file(p: string, o: object): SourceLike } };
    src = StreamSource.file(file, { batchSize: 4000, batchMaxBytes: 4 << 20, maxMessageBytes: 1 << 20 });
  } else {
    const { GeneratorSource } = (await import(join(tree, 'dist/src/sources/generator.js'))) as { GeneratorSource: new (c: object, n: number, b: number) => SourceLike };
    src = new GeneratorSource({ count: 690_000, metrics: 1000, hosts: 4, intervalMs: 30_000, startMs: 1581424933000, seed: 1, rate: 0 }, 4000, 4 << 20);
  }
  const c0 = process.cpuUsage();
  let n = 0;
  const held: Array<{ release?: () => void }> = [];
  for await (const b of src.batches()) {
    n += b.offsets.length - 1;
    held.push(b);
    if (held.length > 6) held.shift()!.release?.();
  }
  const c = process.cpuUsage(c0);
  return { records: n, cpuUsPerRecord: (c.user + c.system) / n, userUsPerRecord: c.user / n, sysUsPerRecord: c.system / n };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [kind = 'file', a2 = '5', ...rest] = process.argv.slice(2);
  if (process.env['SOURCE_CPU_CHILD'] !== undefined) {
    process.stdout.write(`${JSON.stringify(await child(process.env['SOURCE_CPU_CHILD'], kind, process.env['SOURCE_CPU_FILE'] ?? ''))}\n`);
  } else {
    const trees = rest.length > 0 ? rest : [fileURLToPath(new URL('../../../', import.meta.url))];
    const f = await ensureCeilometerFile({ samples: 1_000_000, meters: 10, resources: 1000, intervalSeconds: 60, seed: 1 });
    const runs = new Map<string, Measured[]>(trees.map((t) => [t, []]));
    for (let r = 0; r < Number(a2); r++) {
      for (const t of trees) {
        const p = spawnSync(process.execPath, [fileURLToPath(import.meta.url), kind], { env: { ...process.env, SOURCE_CPU_CHILD: t, SOURCE_CPU_FILE: f.path }, encoding: 'utf8' });
        if (p.status !== 0) throw new Error(`${t}: ${p.stderr}`);
        const m = JSON.parse(p.stdout) as Measured;
        runs.get(t)!.push(m);
        process.stderr.write(`round ${r + 1} ${t}: ${m.cpuUsPerRecord.toFixed(3)} us CPU/record (user ${m.userUsPerRecord.toFixed(3)}, sys ${m.sysUsPerRecord.toFixed(3)})\n`);
      }
    }
    for (const [t, ms] of runs) {
      const med = (k: keyof Measured): string => summarize(ms.map((m) => m[k])).median.toFixed(3);
      process.stdout.write(`${kind} ${t}: median ${med('cpuUsPerRecord')} us CPU/record (user ${med('userUsPerRecord')}, sys ${med('sysUsPerRecord')}) over ${ms.length} runs\n`);
    }
  }
}
