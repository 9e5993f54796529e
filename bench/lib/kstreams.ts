// The Kafka Streams peer (bench/kstreams, built by scripts/kstreams.sh) as a child process, for the
// kafka-e2e scenario and test/integration/kstreams-peer.test.ts. The peer prints {"event":"running"}
// once its tasks run and, after SIGTERM, {"event":"stopped",...} on stdout and its peak RSS on stderr.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT } from './scenario.js';

export const KSTREAMS_SCRIPT = join(ROOT, 'scripts', 'kstreams.sh');

export const PEER_GUARANTEES = ['at_least_once', 'exactly_once_v2'] as const;
export type PeerGuarantee = (typeof PEER_GUARANTEES)[number];

/** The peer's `"event":"stopped"` line. */
export interface PeerStopped {
  readonly closed: boolean;
  /** Input records parsed / rejected by the JSON deserializer. */
  readonly parsed: number;
  readonly rejected: number;
  /** Kafka Streams' dropped-records-total (late records, unreadable records). */
  readonly droppedRecords: number;
  /** Rows forwarded to the output topic. */
  readonly rows: number;
}

/** Builds the peer once (Maven, cached under .cache/kstreams); fails with Maven's output. */
export function buildPeer(): void {
  const r = spawnSync('bash', [KSTREAMS_SCRIPT, 'build'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 900_000 });
  if (r.status !== 0) throw new Error(`scripts/kstreams.sh build failed (${r.status ?? r.signal}):\n${(r.stderr ?? '').slice(-4000)}`);
}

export interface PeerOptions {
  readonly brokers: string;
  readonly inputTopic: string;
  readonly outputTopic: string;
  /** Consumer group, transactional id prefix and prefix of the internal topics. */
  readonly applicationId: string;
  readonly guarantee: PeerGuarantee;
  readonly stateDir: string;
  /** More settings of PeerApp (WINDOW_SECONDS, COMMIT_INTERVAL_MS, ...). */
  readonly env?: Readonly<Record<string, string>>;
}

export interface PeerProcess {
  readonly child: ChildProcess;
  readonly spawnedAt: number;
  /** Resolves with performance.now() when the peer reports RUNNING; rejects if it exits first. */
  readonly running: Promise<number>;
  readonly exited: Promise<number | null>;
  /** SIGTERM and wait: exit code, the stopped line, peak RSS, the stderr tail. */
  stop(): Promise<{ code: number | null; stopped: PeerStopped | null; maxRssBytes: number; stderrTail: string }>;
  /** SIGKILL if still alive (cleanup after a failure). */
  kill(): void;
}

export function startPeer(o: PeerOptions): PeerProcess {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ...(process.env.JAVA_HOME === undefined ? {} : { JAVA_HOME: process.env.JAVA_HOME }),
    ...(process.env.KSTREAMS_CACHE_DIR === undefined ? {} : { KSTREAMS_CACHE_DIR: process.env.KSTREAMS_CACHE_DIR }),
    KAFKA_BROKERS: o.brokers,
    INPUT_TOPIC: o.inputTopic,
    OUTPUT_TOPIC: o.outputTopic,
    APPLICATION_ID: o.applicationId,
    PROCESSING_GUARANTEE: o.guarantee,
    STATE_DIR: o.stateDir,
    ...o.env,
  };
  const spawnedAt = performance.now();
  // `run` execs the JVM, so the child's pid is the JVM's and SIGTERM reaches it.
  const child = spawn('bash', [KSTREAMS_SCRIPT, 'run'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  let maxRssBytes = NaN;
  let stopped: PeerStopped | null = null;
  createInterface({ input: child.stderr! }).on('line', (line) => {
    if (line.startsWith('{"bench":"maxrss"')) maxRssBytes = (JSON.parse(line) as { maxRssBytes: number }).maxRssBytes;
    else tail = `${tail}${line}\n`.slice(-6000);
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const running = new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const now = performance.now();
      if (!line.startsWith('{')) return;
      const ev = JSON.parse(line) as { event: string } & PeerStopped;
      if (ev.event === 'running') resolve(now);
      else if (ev.event === 'stopped') stopped = ev;
    });
    void exited.then((code) => reject(new Error(`kstreams peer exited with ${code} before running:\n${tail}`)));
  });
  running.catch(() => {});
  return {
    child,
    spawnedAt,
    running,
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const code = await exited;
      return { code, stopped, maxRssBytes, stderrTail: tail };
    },
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** The topics Kafka Streams created for an application (changelogs of its stores): `<appId>-...`. */
export function internalTopics(all: readonly string[], applicationId: string): string[] {
  return all.filter((t) => t.startsWith(`${applicationId}-`));
}
