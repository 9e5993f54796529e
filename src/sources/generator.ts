// The Monasca agent-simulator workload of seed 000: metrics aaa.perf_000.. x hostnames agent_0..,
// values 0..999, the production-like dimension set, one point per message. Deterministic per seed.
import { BatchBuilder } from '../core/batch.js';
import type { GeneratorConfig } from '../config/index.js';
import type { PullSource, Progress, SourceBatch } from './types.js';

/** mulberry32: tiny, fast, good enough for workloads; the same seed gives the same stream. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function hex(rand: () => number, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += Math.floor(rand() * 16).toString(16);
  return s;
}

export interface GeneratedPoint {
  readonly name: string;
  readonly host: number;
  readonly timestamp: number;
  readonly value: number;
  readonly json: string;
}

/** Yields the points one by one; the source and the Kafka producer command both use it. */
export function* generatePoints(cfg: Pick<GeneratorConfig, 'count' | 'metrics' | 'hosts' | 'intervalMs' | 'startMs' | 'seed'>): Generator<GeneratedPoint> {
  const rand = prng(cfg.seed);
  const tenant = hex(rand, 32);
  const hosts = Array.from({ length: cfg.hosts }, () => `${hex(rand, 8)}-${hex(rand, 4)}-${hex(rand, 4)}-${hex(rand, 4)}-${hex(rand, 12)}`);
  const width = Math.max(3, String(cfg.metrics - 1).length);
  const names = Array.from({ length: cfg.metrics }, (_, i) => `aaa.perf_${String(i).padStart(width, '0')}`);
  const perRound = cfg.metrics * cfg.hosts;
  // The envelope up to the timestamp depends only on (metric, host): build each once, on first use.
  const heads = new Map<number, string>();
  const tail = `,"value_meta":{}},"meta":{"tenantId":"${tenant}","region":"RegionOne"},"creation_time":`;
  for (let i = 0; i < cfg.count; i++) {
    const round = Math.floor(i / perRound);
    const within = i % perRound;
    const m = within % cfg.metrics;
    const h = Math.floor(within / cfg.metrics);
    // Jitter inside the round: points of one round arrive slightly out of order, as from real agents.
    const timestamp = cfg.startMs + round * cfg.intervalMs + Math.floor(rand() * Math.min(1000, cfg.intervalMs));
    const value = Math.floor(rand() * 1000);
    const name = names[m]!;
    let head = heads.get(within);
    if (head === undefined) {
      head =
        `{"metric":{"name":"${name}","dimensions":{"cloud_name":"monasca","cluster":"compute","component":"vm",` +
        `"container":"container_0","control_plane":"ccp","hostname":"agent_${h}","resource_id":"${hosts[h]}",` +
        `"service":"service_0","tenant_id":"${tenant}","zone":"nova"},"timestamp":`;
      if (heads.size < 1_000_000) heads.set(within, head);
    }
    const json = `${head}${timestamp},"value":${value}${tail}${Math.floor(timestamp / 1000)}}`;
    yield { name, host: h, timestamp, value, json };
  }
}

export class GeneratorSource implements PullSource {
  readonly describe = 'generator';
  #done = 0;
  #stopped = false;

  constructor(
    private readonly cfg: GeneratorConfig,
    private readonly batchSize: number,
    private readonly batchMaxBytes: number,
  ) {}

  progress(): Progress {
    return { done: this.#done, total: this.cfg.count, unit: 'messages' };
  }

  stop(): void {
    this.#stopped = true;
  }

  async *batches(): AsyncIterable<SourceBatch> {
    const builder = new BatchBuilder(Math.min(this.batchMaxBytes, 1 << 20));
    const started = performance.now();
    for (const p of generatePoints(this.cfg)) {
      if (this.#stopped) break;
      builder.pushString(p.json);
      if (builder.count >= this.batchSize || builder.bytes >= this.batchMaxBytes) {
        this.#done += builder.count;
        yield { partition: 0, ...builder.take() };
        await this.#throttle(started);
      }
    }
    if (builder.count > 0 && !this.#stopped) {
      this.#done += builder.count;
      yield { partition: 0, ...builder.take() };
    }
  }

  async #throttle(started: number): Promise<void> {
    if (this.cfg.rate <= 0) return;
    const due = started + (this.#done / this.cfg.rate) * 1000;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
  }
}
