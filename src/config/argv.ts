// The command line and the environment around the table: flags equal to the variables, variables
// that look meant for us but are no option (names only: values may be secrets), and --help.
import { ConfigError } from '../errors.js';
import { OPTIONS, allowedText, flagFor, secretNote, type OptionSpec } from './options.js';
import type { Env } from './reader.js';

/**
 * CLI flags equal to the variables: --worker-threads 2 or --worker-threads=2 is WORKER_THREADS=2.
 * Flags win over the environment. Returns 'help' for --help and 'version' for --version, wherever
 * they stand, so that asking never starts anything.
 */
export function argvToEnv(argv: readonly string[], env: Env): Record<string, string | undefined> | 'help' | 'version' {
  if (argv.some((a) => a === '--help' || a === '-h')) return 'help';
  if (argv.includes('--version')) return 'version';
  const out: Record<string, string | undefined> = { ...env };
  const byFlag = new Map<string, string>(OPTIONS.map((o) => [flagFor(o.env), o.env]));
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf('=');
    const flag = eq === -1 ? a : a.slice(0, eq);
    const name = byFlag.get(flag);
    if (name === undefined) {
      // Only the part before "=": what follows may be a password typed into a misspelled flag.
      throw new ConfigError('argument', flag, `a known flag is allowed (see --help); e.g. ${flagFor('WORKER_THREADS')} 2`);
    }
    let value: string | undefined;
    if (eq !== -1) value = a.slice(eq + 1);
    else value = argv[++i];
    if (value === undefined) throw new ConfigError(name, '', `${flag} needs a value`);
    out[name] = value;
  }
  return out;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
function editDistance(a: string, b: string): number {
  // Three rows of the table (the swap looks two back), reused: start-up runs this for every
  // variable of the environment against every option.
  const w = b.length + 1;
  let prev2 = new Int32Array(w);
  let prev = Int32Array.from({ length: w }, (_, j) => j);
  let cur = new Int32Array(w);
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      let v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a.charCodeAt(i - 1) === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === b.charCodeAt(j - 1)) v = Math.min(v, prev2[j - 2]! + 1);
      cur[j] = v;
    }
    [prev2, prev, cur] = [prev, cur, prev2];
  }
  return prev[b.length]!;
}

/** Prefixes that two or more options share (KAFKA_, GEN_, MAX_, ...): a variable with one is meant for us. */
const OPTION_PREFIXES = [...new Set(OPTIONS.map((o) => o.env.split('_')[0]!))]
  .filter((p) => OPTIONS.filter((o) => o.env.startsWith(`${p}_`)).length >= 2)
  .map((p) => `${p}_`);

/** The first word of every option (WINDOW of WINDOW_SECONDS): a variable that starts with one is looked at closer. */
const OPTION_HEADS = new Set(OPTIONS.map((o) => o.env.split('_')[0]!));

/**
 * Look like ours but are not: scripts/kafka.sh's ports, Kafka's own launch scripts, and the
 * variables Kubernetes injects for every Service of the namespace (a Service "kafka" gives
 * KAFKA_PORT=tcp://..., KAFKA_SERVICE_HOST, KAFKA_PORT_9092_TCP_ADDR, ...).
 */
function notOurs(name: string, value: string): boolean {
  if (['KAFKA_PORT', 'KAFKA_CONTROLLER_PORT', 'KAFKA_HOME', 'KAFKA_OPTS', 'KAFKA_HEAP_OPTS', 'KAFKA_JVM_PERFORMANCE_OPTS', 'KAFKA_LOG4J_OPTS'].includes(name)) return true;
  if (/_SERVICE_(HOST|PORT)(_[A-Z0-9_]+)?$/.test(name) || /_PORT_\d+_(TCP|UDP|SCTP)(_(ADDR|PORT|PROTO))?$/.test(name)) return true;
  return /_PORT$/.test(name) && /^(tcp|udp|sctp):\/\//.test(value);
}

/**
 * Environment variables that look meant for us but are no option, each with the closest option:
 * a misspelled WORKER_THREAD=2 would otherwise be ignored without a word. `extra` are variables
 * of the command itself (streamstats-produce's PRODUCE_*). Names only: values may be secrets.
 */
export function unknownVariables(env: Env, extra: readonly string[] = []): Array<{ name: string; closest: string }> {
  const known = new Set<string>([...OPTIONS.map((o) => o.env), ...extra]);
  const out: Array<{ name: string; closest: string }> = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || known.has(name) || notOurs(name, value)) continue;
    // Short names are close to too much (LINK is one edit from SINK): one edit from 5 letters on,
    // two from 8; shorter ones only by exact prefix.
    // A name that starts with an option's first word and goes on (WINDOW_SECS) is an abbreviation
    // as often as a typo: it may be a third of its length away.
    const head = name.indexOf('_') > 0 && OPTION_HEADS.has(name.slice(0, name.indexOf('_')));
    const reach = Math.max(name.length >= 8 ? 2 : name.length >= 5 ? 1 : 0, head ? Math.floor(name.length / 3) : 0);
    const prefixed = OPTION_PREFIXES.some((p) => name.startsWith(p));
    let closest = '';
    let best = Infinity;
    for (const o of known) {
      // Without one of our prefixes only a near option counts, and a length apart by more than
      // the reach is never near: most of the environment is decided without a table.
      if (!prefixed && Math.abs(o.length - name.length) > reach) continue;
      const dist = editDistance(name, o);
      if (dist < best) [best, closest] = [dist, o];
    }
    if (best <= reach || prefixed) out.push({ name, closest });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** The start-up warning for unknownVariables(), one line; null when there is nothing to say. */
export function unknownVariablesWarning(found: ReturnType<typeof unknownVariables>): string | null {
  if (found.length === 0) return null;
  const list = found.map((f) => `${f.name} (did you mean ${f.closest}?)`).join(', ');
  return `ignoring environment variables that are not options: ${list}; see --help`;
}

export function helpText(): string {
  const lines = [
    'streamstats: parallel JSON decode + event-time window statistics, with Prometheus metrics.',
    '',
    'Usage: streamstats [--flag value ...]   (every flag has an equal environment variable)',
    '       streamstats --help | --version',
    '',
  ];
  for (const o of OPTIONS as readonly OptionSpec[]) {
    const allowed = allowedText(o);
    const def = o.default === '' ? '' : ` (default ${o.default})`;
    lines.push(`  ${o.env.padEnd(26)} ${flagFor(o.env).padEnd(28)} ${o.help}${secretNote(o)}${allowed === '' ? '' : ` [${allowed}]`}${def}`);
  }
  return lines.join('\n');
}
