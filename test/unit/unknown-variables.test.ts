// unknownVariables skips the edit-distance table for options too far apart in length to be near; the
// answer must be what comparing every variable with every option gives (the reference below).
import t from 'tap';
import { OPTIONS } from '../../src/config/options.js';
import { unknownVariables } from '../../src/config/index.js';
import { Rng } from '../fixtures/gen.js';

/** Optimal string alignment distance, the whole table (the definition). */
function osa(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

t.test('the closest option and who is reported, as a comparison with every option gives', async (t) => {
  const rng = new Rng(11);
  const names: string[] = OPTIONS.map((o) => o.env);
  const heads = new Set(names.map((n) => n.split('_')[0]!));
  const prefixes = [...new Set(names.map((n) => n.split('_')[0]!))].filter((p) => names.filter((n) => n.startsWith(`${p}_`)).length >= 2).map((p) => `${p}_`);
  let checked = 0;
  for (let round = 0; round < 200; round++) {
    const env: Record<string, string> = {};
    for (let i = 0; i < 20; i++) {
      let n = names[rng.below(names.length)]!;
      const p = rng.below(n.length);
      const c = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ_0'[rng.below(28)]!;
      switch (rng.below(6)) {
        case 0: n = n.slice(0, p) + n.slice(p + 1); break;
        case 1: n = n.slice(0, p) + c + n.slice(p); break;
        case 2: n = n.slice(0, p) + c + n.slice(p + 1); break;
        case 3: n = `${n.slice(0, p)}${c}${c}${n.slice(p + 2)}`; break;
        case 4: n = n.slice(0, p) + (n[p + 1] ?? '') + (n[p] ?? '') + n.slice(p + 2); break;
        default: n = ['PATH', 'LINK', 'SINKS', 'FOO_BAR', 'MAX_X', 'GEN', 'KAFKA_BROKER', 'WORKER_THREAD', 'A', 'WINDOW_SECS', 'WINDOW_SIZE', 'SINK_URL'][rng.below(12)]!;
      }
      env[n] = 'v';
    }
    const want: Array<{ name: string; closest: string }> = [];
    const known = new Set<string>(names);
    // Names the parser knows are somebody else's (argv.ts notOurs): never reported.
    const others = ['KAFKA_PORT', 'KAFKA_CONTROLLER_PORT', 'KAFKA_HOME', 'KAFKA_OPTS', 'KAFKA_HEAP_OPTS', 'KAFKA_JVM_PERFORMANCE_OPTS', 'KAFKA_LOG4J_OPTS'];
    for (const name of Object.keys(env)) {
      if (known.has(name) || others.includes(name) || /_SERVICE_(HOST|PORT)/.test(name) || /_PORT_\d+_/.test(name)) continue;
      let best = Infinity;
      let closest = '';
      for (const o of known) {
        const d = osa(name, o);
        if (d < best) [best, closest] = [d, o];
      }
      const head = name.indexOf('_') > 0 && heads.has(name.slice(0, name.indexOf('_')));
      const reach = Math.max(name.length >= 8 ? 2 : name.length >= 5 ? 1 : 0, head ? Math.floor(name.length / 3) : 0);
      if (best <= reach || prefixes.some((p) => name.startsWith(p))) want.push({ name, closest });
    }
    want.sort((a, b) => a.name.localeCompare(b.name));
    t.same(unknownVariables(env), want, `round ${round}`);
    checked += Object.keys(env).length;
  }
  t.ok(checked > 3000, `${checked} variables checked`);
});

t.test('an abbreviated option (WINDOW_SECS) is reported with the option it abbreviates; unrelated names are not', async (t) => {
  const found = unknownVariables({ WINDOW_SECS: '60', WORKER_THRDS: '2', HOME: '/root', WINDOWID: '1', DISPLAY: ':0' });
  t.same(found, [
    { name: 'WINDOW_SECS', closest: 'WINDOW_SECONDS' },
    { name: 'WORKER_THRDS', closest: 'WORKER_THREADS' },
  ]);
});
