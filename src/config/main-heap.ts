// The main thread's heap is sized when node makes it, before any of our code runs: V8 reads
// --initial-old-space-size and --max-semi-space-size for a heap only as it creates it (the workers'
// heaps, made later, take the values set at run time: deferWorkerCollections). So the bin starts node
// once more with them, in the same process (execve: same pid, stdin, stdout, stderr and environment),
// before it loads anything else; a plain `node dist/src/cli.js`, `npx streamstats` and the image's
// entrypoint all get them.
//
// Why these two. Left to V8, the main thread's heap starts with a first collection limit of a few
// MiB and keeps 15-20 MiB live, while its young generation grows to 64 MiB semi-spaces; V8 starts
// marking a heap whose room below its limit is less than its young generation, so with the 30 %
// growth of boundHeapGrowth it marked without pause: 47 full collections in 3.5 s of Kafka -> file
// (1 M records), and V8's helper threads spent on them as much CPU as the main thread's own work. From
// a first limit of 64 MiB and 8 MiB semi-spaces there is room: V8 helpers 1.38-1.44 -> 0.83-0.94 s,
// main thread 1.35-1.40 -> 1.20-1.31 s, wall time 3.47-3.53 -> 2.93-3.22 s (3 alternated rounds; 32 MiB
// was worse than none, 128 a little better than 64 at twice the garbage before the first collection).
// The smaller semi-spaces cost no measured CPU and bound the young generation the memory budget could
// not (src/config/memory.ts).

export const MAIN_HEAP_DEFAULTS = {
  /** MiB: the main heap's first full-collection limit (V8's --initial-old-space-size). */
  initialOldSpaceMb: 64,
  /** MiB: the largest semi-space of the main heap's young generation (V8's --max-semi-space-size). */
  maxSemiSpaceMb: 8,
} as const;

/** Our flags, each with the pattern that finds the same V8 flag given by the user (either spelling). */
const FLAGS: ReadonlyArray<{ readonly flag: string; readonly given: RegExp }> = [
  { flag: `--initial-old-space-size=${MAIN_HEAP_DEFAULTS.initialOldSpaceMb}`, given: /(^|\s)--initial[-_]old[-_]space[-_]size\b/ },
  { flag: `--max-semi-space-size=${MAIN_HEAP_DEFAULTS.maxSemiSpaceMb}`, given: /(^|\s)--((max|min)[-_])?semi[-_]space[-_]size\b/ },
];

/** The flags the relaunch adds: exactly these strings, so a heap flag set at run time can tell ours from the user's. */
export const MAIN_HEAP_FLAGS: readonly string[] = FLAGS.map((f) => f.flag);

export interface LaunchFacts {
  readonly platform: string;
  /** Whether the runtime has process.execve (Node >= 22.15 / 23.11, not on Windows). */
  readonly canExec: boolean;
  readonly execPath: string;
  readonly execArgv: readonly string[];
  /** process.argv: [node, script, ...args]. */
  readonly argv: readonly string[];
  readonly nodeOptions: string;
  /** An IPC channel to a parent (node's fork()): its descriptor would not survive the exec. */
  readonly hasChannel: boolean;
  /** STREAMSTATS_RELAUNCH: "0" keeps the heap V8 gave the launch. */
  readonly relaunch: string | undefined;
}

/**
 * The argv to start node again with (args[0] is node itself), or null to run as launched: the
 * flags are there already (given by the user, on the command line or in NODE_OPTIONS, or by the
 * relaunch itself), the platform cannot exec, a parent talks to the process over IPC, or
 * STREAMSTATS_RELAUNCH=0.
 */
export function relaunchArgv(f: LaunchFacts): string[] | null {
  if (f.relaunch === '0' || !f.canExec || f.platform === 'win32' || f.hasChannel) return null;
  const script = f.argv[1];
  if (script === undefined) return null;
  const launch = f.execArgv.join(' ');
  const missing = FLAGS.filter((x) => !x.given.test(launch) && !x.given.test(f.nodeOptions)).map((x) => x.flag);
  if (missing.length === 0) return null;
  return [f.execPath, ...missing, ...f.execArgv, script, ...f.argv.slice(2)];
}

/** Whether `flag` (a V8 flag as it appears in execArgv) was put there by the relaunch. */
export function isRelaunchFlag(flag: string): boolean {
  return MAIN_HEAP_FLAGS.includes(flag);
}
