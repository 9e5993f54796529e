// The Monasca agent-simulator workload of seed 000: metrics aaa.perf_000.. x hostnames agent_0..,
// values 0..999, the production-like dimension set, one point per message. Deterministic per seed.
// Pure (no I/O, no timers), so a lane owner (LANE_STATE=worker) generates its lanes' points itself
// and the main thread never touches their bytes: ../sources/generator.ts drives it.
import type { BatchBuilder } from './batch.js';

/** What the points depend on (GEN_* options; GEN_RATE is the driver's). */
export interface GeneratorShape {
  readonly count: number;
  readonly metrics: number;
  readonly hosts: number;
  readonly intervalMs: number;
  readonly startMs: number;
  readonly seed: number;
}

/** mulberry32's increment: its state after k draws is seed + k * GOLDEN (mod 2^32). */
const GOLDEN = 0x6d2b79f5;

/** mulberry32's output for a state already advanced. */
function mix(a: number): number {
  let t = a;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

/** mulberry32: tiny, fast, good enough for workloads; the same seed gives the same stream. */
export function prng(seed: number): () => number {
  // The state lives in a typed array: a uint32 above 2^30 kept in a closure variable is a heap
  // number, allocated anew on every call (two a point: a fifth of the generator's time was GC).
  const state = Uint32Array.of(seed >>> 0);
  return () => {
    const a = (state[0]! + GOLDEN) >>> 0;
    state[0] = a;
    return mix(a);
  };
}

/**
 * Draw k (from 0) of prng(seed), without the k before it: mulberry32's state is a counter, so any
 * draw is one multiply away. This is what lets each lane generate only its own points.
 */
export function prngAt(seed: number, k: number): number {
  // Math.imul takes k + 1 modulo 2^32 exactly (any integer below 2^53): the product modulo 2^32.
  return mix((seed + Math.imul(k + 1, GOLDEN)) >>> 0);
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

/** Draws before the points': the tenant (32 hex digits), then each host's resource id (32). */
function drawsBefore(hosts: number): number {
  return 32 + 32 * hosts;
}

/**
 * The fixed parts of the points' JSON: head (depends only on the metric and host), then timestamp,
 * `,"value":`, value, tail, creation time in seconds, `}`. Writers put these parts straight into a
 * batch buffer; generatePoints joins them into strings.
 */
export class Workload {
  readonly cfg: GeneratorShape;
  readonly tail: string;
  readonly names: string[];
  /** Series of one round (metrics x hosts): point i is series i mod perRound, in round floor(i / perRound). */
  readonly perRound: number;
  readonly #hosts: string[];
  readonly #tenant: string;
  readonly #heads = new Map<number, string>();

  constructor(cfg: GeneratorShape) {
    this.cfg = cfg;
    const rand = prng(cfg.seed);
    this.#tenant = hex(rand, 32);
    this.#hosts = Array.from({ length: cfg.hosts }, () => `${hex(rand, 8)}-${hex(rand, 4)}-${hex(rand, 4)}-${hex(rand, 4)}-${hex(rand, 12)}`);
    const width = Math.max(3, String(cfg.metrics - 1).length);
    this.names = Array.from({ length: cfg.metrics }, (_, i) => `aaa.perf_${String(i).padStart(width, '0')}`);
    this.perRound = cfg.metrics * cfg.hosts;
    this.tail = `,"value_meta":{}},"meta":{"tenantId":"${this.#tenant}","region":"RegionOne"},"creation_time":`;
  }

  /** The envelope up to the timestamp of series `within`, built once on first use (a million kept at most). */
  head(within: number): string {
    let head = this.#heads.get(within);
    if (head !== undefined) return head;
    const metric = within % this.cfg.metrics;
    const host = Math.floor(within / this.cfg.metrics);
    head =
      `{"metric":{"name":"${this.names[metric]!}","dimensions":{"cloud_name":"monasca","cluster":"compute","component":"vm",` +
      `"container":"container_0","control_plane":"ccp","hostname":"agent_${host}","resource_id":"${this.#hosts[host]!}",` +
      `"service":"service_0","tenant_id":"${this.#tenant}","zone":"nova"},"timestamp":`;
    if (this.#heads.size < 1_000_000) this.#heads.set(within, head);
    return head;
  }

  /** An upper bound of one point's bytes: the longest head, the widest numbers. */
  maxPointBytes(): number {
    // The last series has the widest host number; metric names all have one width.
    return this.head(this.perRound - 1).length + 2 * 17 + ',"value":'.length + 3 + this.tail.length + 1;
  }
}

/** The points one by one, from one sequential PRNG; the Kafka producer command and the tests use it. */
export function* generatePoints(cfg: GeneratorShape): Generator<GeneratedPoint> {
  const w = new Workload(cfg);
  const rand = prng(cfg.seed);
  for (let k = drawsBefore(cfg.hosts); k > 0; k--) rand();
  const jitter = Math.min(1000, cfg.intervalMs);
  for (let i = 0; i < cfg.count; i++) {
    const within = i % w.perRound;
    // Jitter inside the round: points of one round arrive slightly out of order, as from real agents.
    const timestamp = cfg.startMs + Math.floor(i / w.perRound) * cfg.intervalMs + Math.floor(rand() * jitter);
    const value = Math.floor(rand() * 1000);
    const json = `${w.head(within)}${timestamp},"value":${value}${w.tail}${Math.floor(timestamp / 1000)}}`;
    yield { name: w.names[within % cfg.metrics]!, host: Math.floor(within / cfg.metrics), timestamp, value, json };
  }
}

const VALUE = Buffer.from(',"value":');
const CLOSE = Buffer.from('}');

/**
 * One lane's share of the workload: of `lanes` lanes, lane `index` gets the points of the series whose
 * index is `index` modulo `lanes`, in their order. So each series' points stay in order in one lane,
 * every window gets the records it gets from one lane, and each lane's event time (so its watermark)
 * advances round by round as the whole stream's does.
 */
export interface LaneShare {
  readonly lanes: number;
  readonly index: number;
}

/** A lane whose owner generates its input: the workload and the lane's share of it. */
export interface GeneratedLane {
  readonly shape: GeneratorShape;
  readonly share: LaneShare;
}

/** How many lanes a workload splits into for `owners` owners: no lane without a series. */
export function laneCount(cfg: Pick<GeneratorShape, 'metrics' | 'hosts'>, owners: number): number {
  return Math.max(1, Math.min(owners, cfg.metrics * cfg.hosts));
}

/** Writes the points of one lane's share; any point of it is reached directly (see prngAt). */
export class LanePoints {
  readonly workload: Workload;
  /** Points of the share in all (of GEN_COUNT). */
  readonly count: number;
  readonly #share: LaneShare;
  /** Series of the share in one round. */
  readonly #perRound: number;
  readonly #first: number;
  readonly #jitter: number;

  constructor(cfg: GeneratorShape, share: LaneShare, workload = new Workload(cfg)) {
    if (!(Number.isInteger(share.lanes) && share.lanes >= 1 && Number.isInteger(share.index) && share.index >= 0 && share.index < share.lanes)) {
      throw new RangeError(`lane share ${share.index} of ${share.lanes}: index must be an integer in [0, lanes)`);
    }
    this.workload = workload;
    this.#share = share;
    const all = workload.perRound;
    this.#perRound = share.index < all ? Math.floor((all - 1 - share.index) / share.lanes) + 1 : 0;
    const rounds = Math.floor(cfg.count / all);
    const rest = cfg.count - rounds * all;
    this.count = rounds * this.#perRound + (rest > share.index ? Math.floor((rest - 1 - share.index) / share.lanes) + 1 : 0);
    this.#first = drawsBefore(cfg.hosts);
    this.#jitter = Math.min(1000, cfg.intervalMs);
  }

  /** Point `j` of the share (0-based): its index in the whole stream. */
  pointIndex(j: number): number {
    const round = Math.floor(j / this.#perRound);
    return round * this.workload.perRound + this.#share.index + this.#share.lanes * (j - round * this.#perRound);
  }

  /**
   * Appends points from..from+n (clipped at the share's end) as messages, stopping after the one that
   * brings the batch to maxBytes; returns how many it appended.
   */
  write(builder: BatchBuilder, from: number, n: number, maxBytes = Infinity): number {
    const w = this.workload;
    const cfg = w.cfg;
    const tail = w.tail;
    const end = Math.min(this.count, from + n);
    // Heads and tail are ASCII: written as strings (a native copy), not as Buffers (see appendLatin1).
    for (let j = from; j < end; j++) {
      const i = this.pointIndex(j);
      const round = Math.floor(i / w.perRound);
      const timestamp = cfg.startMs + round * cfg.intervalMs + Math.floor(prngAt(cfg.seed, this.#first + 2 * i) * this.#jitter);
      builder.appendLatin1(w.head(i - round * w.perRound));
      builder.appendUint(timestamp);
      builder.append(VALUE);
      builder.appendUint(Math.floor(prngAt(cfg.seed, this.#first + 2 * i + 1) * 1000));
      builder.appendLatin1(tail);
      builder.appendUint(Math.floor(timestamp / 1000));
      builder.append(CLOSE);
      builder.end();
      if (builder.bytes >= maxBytes) return j + 1 - from;
    }
    return Math.max(0, end - from);
  }
}
