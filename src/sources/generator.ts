// The Monasca agent-simulator workload of seed 000: metrics aaa.perf_000.. x hostnames agent_0..,
// values 0..999, the production-like dimension set, one point per message. Deterministic per seed.
import { sleep } from '../async/index.js';
import { BatchBuilder } from '../core/batch.js';
import { BufferRecycler } from './recycle.js';
import type { GeneratorConfig } from '../config/index.js';
import type { PullSource, Progress, SourceBatch } from './types.js';

/** mulberry32: tiny, fast, good enough for workloads; the same seed gives the same stream. */
export function prng(seed: number): () => number {
  // The state lives in a typed array: a uint32 above 2^30 kept in a closure variable is a heap
  // number, allocated anew on every call (two a point: a fifth of the generator's time was GC).
  const state = Uint32Array.of(seed >>> 0);
  return () => {
    const a = (state[0]! + 0x6d2b79f5) >>> 0;
    state[0] = a;
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

type GeneratorShape = Pick<GeneratorConfig, 'count' | 'metrics' | 'hosts' | 'intervalMs' | 'startMs' | 'seed'>;

/**
 * The points as parts of their JSON: head (depends only on the metric and host), then timestamp,
 * `,"value":`, value, tail, creation time in seconds, `}`. The source writes these parts straight into
 * its batch buffer; generatePoints joins them into strings.
 */
class PointStream {
  readonly tail: string;
  readonly names: string[];
  readonly #hosts: string[];
  readonly #tenant: string;
  readonly #rand: () => number;
  readonly #cfg: GeneratorShape;
  readonly #perRound: number;
  i = 0;
  timestamp = 0;
  value = 0;
  /** Index of the (metric, host) pair of the current point. */
  within = 0;

  constructor(cfg: GeneratorShape) {
    this.#cfg = cfg;
    this.#rand = prng(cfg.seed);
    this.#tenant = hex(this.#rand, 32);
    this.#hosts = Array.from({ length: cfg.hosts }, () => `${hex(this.#rand, 8)}-${hex(this.#rand, 4)}-${hex(this.#rand, 4)}-${hex(this.#rand, 4)}-${hex(this.#rand, 12)}`);
    const width = Math.max(3, String(cfg.metrics - 1).length);
    this.names = Array.from({ length: cfg.metrics }, (_, i) => `aaa.perf_${String(i).padStart(width, '0')}`);
    this.#perRound = cfg.metrics * cfg.hosts;
    this.tail = `,"value_meta":{}},"meta":{"tenantId":"${this.#tenant}","region":"RegionOne"},"creation_time":`;
  }

  /** Advances to the next point; false at the end. */
  next(): boolean {
    const cfg = this.#cfg;
    if (this.i >= cfg.count) return false;
    const round = Math.floor(this.i / this.#perRound);
    this.within = this.i % this.#perRound;
    // Jitter inside the round: points of one round arrive slightly out of order, as from real agents.
    this.timestamp = cfg.startMs + round * cfg.intervalMs + Math.floor(this.#rand() * Math.min(1000, cfg.intervalMs));
    this.value = Math.floor(this.#rand() * 1000);
    this.i++;
    return true;
  }

  get metric(): number {
    return this.within % this.#cfg.metrics;
  }

  get host(): number {
    return Math.floor(this.within / this.#cfg.metrics);
  }

  head(): string {
    return (
      `{"metric":{"name":"${this.names[this.metric]!}","dimensions":{"cloud_name":"monasca","cluster":"compute","component":"vm",` +
      `"container":"container_0","control_plane":"ccp","hostname":"agent_${this.host}","resource_id":"${this.#hosts[this.host]!}",` +
      `"service":"service_0","tenant_id":"${this.#tenant}","zone":"nova"},"timestamp":`
    );
  }
}

/** Yields the points one by one; the Kafka producer command and the tests use it. */
export function* generatePoints(cfg: GeneratorShape): Generator<GeneratedPoint> {
  const s = new PointStream(cfg);
  // The envelope up to the timestamp depends only on (metric, host): build each once, on first use.
  const heads = new Map<number, string>();
  while (s.next()) {
    let head = heads.get(s.within);
    if (head === undefined) {
      head = s.head();
      if (heads.size < 1_000_000) heads.set(s.within, head);
    }
    const json = `${head}${s.timestamp},"value":${s.value}${s.tail}${Math.floor(s.timestamp / 1000)}}`;
    yield { name: s.names[s.metric]!, host: s.host, timestamp: s.timestamp, value: s.value, json };
  }
}

const VALUE = Buffer.from(',"value":');
const CLOSE = Buffer.from('}');

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
    const recycler = new BufferRecycler();
    const builder = new BatchBuilder(Math.min(this.batchMaxBytes, 1 << 20), recycler.allocate);
    const started = performance.now();
    const s = new PointStream(this.cfg);
    // The same bytes generatePoints would give, written in parts: no string per point is built (and
    // measured, and copied) on the way into the batch.
    // Heads and tail are ASCII: written as strings (a native copy), not as Buffers (see appendLatin1).
    const heads = new Map<number, string>();
    const tail = s.tail;
    while (s.next()) {
      if (this.#stopped) break;
      let head = heads.get(s.within);
      if (head === undefined) {
        head = s.head();
        if (heads.size < 1_000_000) heads.set(s.within, head);
      }
      builder.appendLatin1(head);
      builder.appendUint(s.timestamp);
      builder.append(VALUE);
      builder.appendUint(s.value);
      builder.appendLatin1(tail);
      builder.appendUint(Math.floor(s.timestamp / 1000));
      builder.append(CLOSE);
      builder.end();
      if (builder.count >= this.batchSize || builder.bytes >= this.batchMaxBytes) {
        this.#done += builder.count;
        yield recycler.track({ lane: 0, ...builder.take() });
        await this.#throttle(started);
      }
    }
    if (builder.count > 0 && !this.#stopped) {
      this.#done += builder.count;
      yield recycler.track({ lane: 0, ...builder.take() });
    }
  }

  async #throttle(started: number): Promise<void> {
    if (this.cfg.rate <= 0) return;
    const due = started + (this.#done / this.cfg.rate) * 1000;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
  }
}
