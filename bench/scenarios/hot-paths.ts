// Step-by-step measures: the CPU per record of the two hot paths, for any built checkout,
// so a commit can be compared with another side by side. Each measure runs in a fresh child process
// per tree, the trees alternate, and the best of several passes in a child is kept (the machine is
// shared: the best pass is the one least disturbed).
//   decode: 200,000 seed-000 points packed 4,000 a batch, Decoder.decodeBatchCompact (what a worker
//           runs), process CPU around the decode calls only, per record.
//   rows:   RowFormatter.format + ndjson() + the UTF-8 encoding a file sink does, for 40 emissions
//           of 4,000 seed-000 rows, process CPU per row.
// Usage: node dist/bench/scenarios/hot-paths.js ROUNDS TREE [TREE ...]   (a TREE is a built checkout)
//        node dist/bench/scenarios/hot-paths.js --child decode|rows TREE   (one measure, JSON out)
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface DecoderLike {
  decodeBatchCompact(buffer: ArrayBuffer, offsets: Uint32Array, nowMs: number): unknown;
}

const START_MS = 1_581_424_933_000;

async function measureDecode(tree: string): Promise<number> {
  const { Decoder } = (await import(join(tree, 'dist/src/core/decode.js'))) as { Decoder: new (s: unknown) => DecoderLike };
  const { generatePoints } = (await import(join(tree, 'dist/src/sources/generator.js'))) as {
    generatePoints: (c: unknown) => Iterable<{ json: string }>;
  };
  const settings = { format: { kind: 'monasca' }, groupBy: null, windowMs: 60_000, maxMessageBytes: 1 << 20, maxDimensions: 64, maxFutureMs: 0, sketchAccuracy: 0 };
  const batches: Array<{ bytes: Buffer; offsets: Uint32Array }> = [];
  let parts: Buffer[] = [];
  let offsets = [0];
  let len = 0;
  for (const p of generatePoints({ count: 200_000, metrics: 1000, hosts: 4, intervalMs: 30_000, startMs: START_MS, seed: 1 })) {
    const b = Buffer.from(p.json);
    parts.push(b);
    len += b.length;
    offsets.push(len);
    if (parts.length === 4000) {
      batches.push({ bytes: Buffer.concat(parts), offsets: Uint32Array.from(offsets) });
      parts = [];
      offsets = [0];
      len = 0;
    }
  }
  let best = Infinity;
  for (let pass = 0; pass < 4; pass++) {
    // A fresh decoder per pass: the first batches pay for new series, as in a real run.
    const d = new Decoder(settings);
    let cpu = 0;
    for (const b of batches) {
      const ab = new ArrayBuffer(b.bytes.length);
      new Uint8Array(ab).set(b.bytes);
      const c0 = process.cpuUsage();
      d.decodeBatchCompact(ab, b.offsets.slice(), 0);
      const c = process.cpuUsage(c0);
      cpu += c.user + c.system;
    }
    best = Math.min(best, cpu / 200_000);
  }
  return best;
}

async function measureRows(tree: string): Promise<number> {
  const { RowFormatter } = (await import(join(tree, 'dist/src/windows/row.js'))) as {
    RowFormatter: new (w: number, max: number, p: number[]) => { format(cells: unknown[]): { rows: unknown[]; ndjson(): string } };
  };
  const { seriesKey } = (await import(join(tree, 'dist/src/core/series.js'))) as { seriesKey: (n: string, u: null, d: Array<[string, string]>, g: null) => string };
  const tenant = '0123456789abcdef0123456789abcdef';
  const cells = Array.from({ length: 4000 }, (_, i) => {
    const dims: Array<[string, string]> = [
      ['_region', 'RegionOne'], ['_tenant_id', tenant], ['cloud_name', 'monasca'], ['cluster', 'compute'], ['component', 'vm'],
      ['container', 'container_0'], ['control_plane', 'ccp'], ['hostname', `agent_${i % 4}`],
      ['resource_id', `3c5f8e2a-1b2c-4d5e-8f90-12345678${String(i % 4).padStart(4, '0')}`], ['service', 'service_0'], ['tenant_id', tenant], ['zone', 'nova'],
    ];
    const key = seriesKey(`aaa.perf_${String(i >> 2).padStart(3, '0')}`, null, dims, null);
    return { key, moments: { count: 2, mean: 343.5, m2: 36720.5, min: 208, max: 479, sum: 687, tsMin: START_MS + 50 + i, tsMax: START_MS + 30_273 + i } };
  });
  const f = new RowFormatter(60_000, 100_000, []);
  let best = Infinity;
  for (let pass = 0; pass < 6; pass++) {
    const c0 = process.cpuUsage();
    for (let e = 0; e < 40; e++) {
      const windowStart = 1_581_424_920_000 + (pass * 40 + e) * 60_000;
      const b = f.format(cells.map((c) => ({ ...c, windowStart })));
      Buffer.from(b.ndjson());
      if (b.rows.length !== cells.length) throw new Error('rows lost');
    }
    const c = process.cpuUsage(c0);
    best = Math.min(best, (c.user + c.system) / (40 * 4000));
  }
  return best;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === '--child') {
    const us = args[1] === 'decode' ? await measureDecode(args[2]!) : await measureRows(args[2]!);
    process.stdout.write(`${JSON.stringify({ usPerRecord: us })}\n`);
    return;
  }
  const rounds = Number(args[0]);
  const trees = args.slice(1);
  if (!(rounds >= 1) || trees.length === 0) throw new Error('usage: hot-paths.js ROUNDS TREE [TREE ...]');
  const self = fileURLToPath(import.meta.url);
  const lines = ['| measure | tree | median CPU us per record (row) | runs |', '|---|---|---:|---:|'];
  for (const measure of ['decode', 'rows'] as const) {
    const got = new Map<string, number[]>(trees.map((t) => [t, []]));
    for (let r = 0; r < rounds; r++) {
      for (const tree of trees) {
        const out = spawnSync(process.execPath, [self, '--child', measure, tree], { encoding: 'utf8' });
        if (out.status !== 0) throw new Error(`${measure} ${tree}: ${out.stderr}`);
        const us = (JSON.parse(out.stdout) as { usPerRecord: number }).usPerRecord;
        process.stderr.write(`${measure} ${tree} round ${r}: ${us.toFixed(3)} us\n`);
        got.get(tree)!.push(us);
      }
    }
    for (const tree of trees) lines.push(`| ${measure} | ${tree} | ${median(got.get(tree)!).toFixed(2)} | ${rounds} |`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
