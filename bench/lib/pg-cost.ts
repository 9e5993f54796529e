// What a PostgreSQL write costs on both sides, for the benches: the CPU of the server backends that
// served our connections (found by their application_name in pg_stat_activity, read from
// /proc/<backend pid>/stat: PostgreSQL runs on this machine), the CPU of the client process (the
// engine child, or this process), and the WAL written (pg_current_wal_lsn() before and after: the
// whole server's, so other sessions' writes during a run count too; the benches run alone). Per-relation
// sizes say what a stored row takes, table by table and index by index. Linux only: elsewhere the CPU
// figures are NaN.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';

const TICKS = 100;
const POLL_MS = 100;

/** utime + stime of a process (or a thread, /proc/<pid>/task/<tid>) in seconds; NaN when gone. */
export function procCpuSeconds(statPath: string): number {
  try {
    const st = readFileSync(statPath, 'utf8');
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / TICKS;
  } catch {
    return NaN;
  }
}

/** The ids of the processes whose parent is `ppid` (the engine children of a bench). */
function childrenOf(ppid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]) === ppid) out.push(Number(d));
    } catch {
      // Exited between the listing and the read.
    }
  }
  return out;
}

export interface PgCost {
  /** CPU seconds of the backends with the probe's application_name (each polled to its last sample). */
  readonly serverCpuSeconds: number;
  /** CPU seconds of the client: the children of `clientParent`, or this process. */
  readonly clientCpuSeconds: number;
  /** Of which the client's main thread (its thread id is its pid). */
  readonly clientMainCpuSeconds: number;
  /** WAL bytes the server wrote during the probe (all sessions). */
  readonly walBytes: number;
  /** Backends seen. */
  readonly backends: number;
}

/**
 * Samples until stop(). `admin` is a connection of its own (not one of those measured). With
 * `clientParent`, the client is every child process of that pid (a bench spawns one engine at a time);
 * without, it is this process.
 */
export class PgCostProbe {
  readonly #admin: pg.Client;
  readonly #appName: string;
  readonly #clientParent: number | undefined;
  readonly #backends = new Map<number, { first: number; last: number }>();
  readonly #clients = new Map<number, { first: number; last: number; mainFirst: number; mainLast: number }>();
  #walStart = '0/0';
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<void> = Promise.resolve();

  private constructor(admin: pg.Client, appName: string, clientParent: number | undefined) {
    this.#admin = admin;
    this.#appName = appName;
    this.#clientParent = clientParent;
  }

  static async start(url: string, appName: string, opts: { clientParent?: number } = {}): Promise<PgCostProbe> {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const p = new PgCostProbe(admin, appName, opts.clientParent);
    p.#walStart = (await admin.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0]!.l;
    await p.#poll();
    p.#timer = setInterval(() => {
      p.#polling = p.#polling.then(() => p.#poll()).catch(() => {});
    }, POLL_MS);
    return p;
  }

  /** A process's CPU since it was first seen; one seen only now counts from 0 (it started during the probe). */
  static #note(map: Map<number, { first: number; last: number }>, pid: number, cpu: number, fresh: boolean): void {
    if (Number.isNaN(cpu)) return;
    const e = map.get(pid);
    if (e === undefined) map.set(pid, { first: fresh ? 0 : cpu, last: cpu });
    else e.last = cpu;
  }

  async #poll(): Promise<void> {
    if (!existsSync('/proc/self/stat')) return;
    const fresh = this.#timer !== undefined;
    const { rows } = await this.#admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [this.#appName]);
    for (const { pid } of rows) PgCostProbe.#note(this.#backends, pid, procCpuSeconds(`/proc/${pid}/stat`), fresh);
    const clients = this.#clientParent === undefined ? [process.pid] : childrenOf(this.#clientParent);
    for (const pid of clients) {
      const cpu = procCpuSeconds(`/proc/${pid}/stat`);
      const main = procCpuSeconds(`/proc/${pid}/task/${pid}/stat`);
      if (Number.isNaN(cpu) || Number.isNaN(main)) continue;
      const isNew = this.#clientParent !== undefined && fresh;
      const e = this.#clients.get(pid);
      if (e === undefined) this.#clients.set(pid, { first: isNew ? 0 : cpu, last: cpu, mainFirst: isNew ? 0 : main, mainLast: main });
      else {
        e.last = cpu;
        e.mainLast = main;
      }
    }
  }

  /** One more sample: call it just before a measured client exits, so its last figures are recent. */
  sample(): Promise<void> {
    this.#polling = this.#polling.then(() => this.#poll());
    return this.#polling;
  }

  async stop(): Promise<PgCost> {
    clearInterval(this.#timer);
    await this.#polling.catch(() => {});
    await this.#poll();
    const wal = await this.#admin.query<{ b: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn) AS b', [this.#walStart]);
    await this.#admin.end();
    const sum = <T>(m: Map<number, T>, f: (e: T) => number): number => [...m.values()].reduce((a, e) => a + f(e), 0);
    const linux = existsSync('/proc/self/stat');
    return {
      serverCpuSeconds: linux ? sum(this.#backends, (e) => e.last - e.first) : NaN,
      clientCpuSeconds: linux ? sum(this.#clients, (e) => e.last - e.first) : NaN,
      clientMainCpuSeconds: linux ? sum(this.#clients, (e) => e.mainLast - e.mainFirst) : NaN,
      walBytes: Number(wal.rows[0]!.b),
      backends: this.#backends.size,
    };
  }
}

/** `url` with an application_name, so that a probe finds the backends of its connections. */
export function withAppName(url: string, appName: string): string {
  const u = new URL(url);
  u.searchParams.set('application_name', appName);
  return u.toString();
}

export interface RelationSize {
  readonly relation: string;
  readonly kind: 'table' | 'index';
  /** Of a table: heap + TOAST (pg_table_size); of an index: pg_relation_size. */
  readonly bytes: number;
}

/** Every table and index of a schema with its size (tables with their TOAST, indexes on their own). */
export async function relationSizes(url: string, schema: string): Promise<RelationSize[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query<{ relation: string; kind: string; bytes: string }>(
      `SELECT c.relname AS relation, CASE c.relkind WHEN 'i' THEN 'index' ELSE 'table' END AS kind,
         CASE c.relkind WHEN 'i' THEN pg_relation_size(c.oid) ELSE pg_table_size(c.oid) END AS bytes
       FROM pg_class c WHERE c.relnamespace = $1::regnamespace AND c.relkind IN ('r', 'i') AND c.relpersistence = 'p'
       ORDER BY c.relkind DESC, c.relname`,
      [schema],
    );
    return rows.map((r) => ({ relation: r.relation, kind: r.kind as 'table' | 'index', bytes: Number(r.bytes) }));
  } finally {
    await c.end();
  }
}

/** A probe's figures per stored row (CPU in microseconds). */
export interface PgCostPerRow {
  readonly clientCpuUsPerRow: number;
  readonly clientMainCpuUsPerRow: number;
  readonly serverCpuUsPerRow: number;
  readonly walBytesPerRow: number;
}

export function pgCostPerRow(c: PgCost, rows: number): PgCostPerRow {
  return {
    clientCpuUsPerRow: (c.clientCpuSeconds / rows) * 1e6,
    clientMainCpuUsPerRow: (c.clientMainCpuSeconds / rows) * 1e6,
    serverCpuUsPerRow: (c.serverCpuSeconds / rows) * 1e6,
    walBytesPerRow: c.walBytes / rows,
  };
}
