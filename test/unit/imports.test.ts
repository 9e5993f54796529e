// The import graph of src/ and workers/ has no circle. Type-only imports count: a type that lives in
// the wrong file is a dependency in the wrong direction, whatever the emitted JavaScript keeps.
// Imports are read with the TypeScript scanner (ts.preProcessFile), which sees `import type`,
// `export ... from`, side-effect and dynamic imports alike, and ignores comments and strings.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/**
 * Circles tolerated for now, listed exactly: any other circle fails, and so does an entry here once
 * its circle is gone, so the list can only shrink. It is empty: keep it so.
 */
const KNOWN_CIRCLES: readonly string[] = [];

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** The file a relative specifier names: `./x.js` is `./x.ts`, a folder is its `index.ts`. */
function resolveSpecifier(from: string, spec: string, exists: (p: string) => boolean): string | null {
  if (!spec.startsWith('.')) return null;
  const base = resolve(dirname(from), spec);
  const candidates = [base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), `${base}.ts`, join(base, 'index.ts'), base];
  return candidates.find(exists) ?? null;
}

export type Graph = ReadonlyMap<string, readonly string[]>;

export function importGraph(files: readonly string[], read: (p: string) => string): Graph {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const deps = new Set<string>();
    for (const imp of ts.preProcessFile(read(f), true, true).importedFiles) {
      const to = resolveSpecifier(f, imp.fileName, (p) => known.has(p));
      if (to !== null) deps.add(to);
    }
    graph.set(f, [...deps].sort());
  }
  return graph;
}

/**
 * Every strongly connected component with a circle in it (Tarjan), each given as one concrete circle
 * through its first file (a -> b -> ... -> a), so a failure names the imports to cut.
 */
export function findCycles(graph: Graph): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, idx.get(w)!));
      }
    }
    if (low.get(v) === idx.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1 || (graph.get(v) ?? []).includes(v)) components.push(c.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) visit(v);
  return components.map((c) => circleThrough(graph, new Set(c), c[0]!));
}

/** Shortest path from `start` back to itself inside one component (breadth first). */
function circleThrough(graph: Graph, members: ReadonlySet<string>, start: string): string[] {
  const prev = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!members.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let x = v; x !== start; x = prev.get(x)!) path.splice(1, 0, x);
        return [...path, start];
      }
      if (!prev.has(w)) {
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}

t.test('findCycles finds a circle, names it, and passes a tree', async (t) => {
  const g = new Map([
    ['a', ['b']],
    ['b', ['c', 'd']],
    ['c', ['a']],
    ['d', []],
    ['e', ['e']],
  ]);
  t.same(findCycles(g), [['a', 'b', 'c', 'a'], ['e', 'e']]);
  t.same(findCycles(new Map([['a', ['b', 'c']], ['b', ['c']], ['c', []]])), []);
});

t.test('importGraph reads type-only imports, re-exports and folder imports', async (t) => {
  const files = ['/r/a.ts', '/r/b.ts', '/r/c/index.ts', '/r/d.ts', '/r/e.ts'];
  const text: Record<string, string> = {
    '/r/a.ts': "import type { B } from './b.js';\n// import { D } from './d.js'\nexport const s = \"import './e.js'\";",
    '/r/b.ts': "export type { C } from './c/index.js';\nexport * from './d.js';",
    '/r/c/index.ts': "import '../e.js';\nimport pino from 'pino';",
    '/r/d.ts': "const x = await import('./a.js');",
    '/r/e.ts': '',
  };
  const g = importGraph(files, (p) => text[p]!);
  t.same(g.get('/r/a.ts'), ['/r/b.ts'], 'type import seen; comment and string ignored');
  t.same(g.get('/r/b.ts'), ['/r/c/index.ts', '/r/d.ts'], 'export ... from, folder index');
  t.same(g.get('/r/c/index.ts'), ['/r/e.ts'], 'side-effect import; packages skipped');
  t.same(findCycles(g), [['/r/a.ts', '/r/b.ts', '/r/d.ts', '/r/a.ts']], 'dynamic import closes the circle');
});

t.test('src/ and workers/ import no circle (type-only imports count)', async (t) => {
  const files = [...tsFiles(join(ROOT, 'src')), ...tsFiles(join(ROOT, 'workers'))];
  t.ok(files.length > 20, `read ${files.length} files under ${ROOT}`);
  const cycles = findCycles(importGraph(files, (p) => readFileSync(p, 'utf8')));
  const named = cycles.map((c) => c.map((f) => relative(ROOT, f)).join(' -> '));
  const unknown = named.filter((c) => !KNOWN_CIRCLES.includes(c));
  t.same(unknown, [], unknown.length === 0 ? 'no circle' : `import circles:\n  ${unknown.join('\n  ')}`);
  const gone = KNOWN_CIRCLES.filter((c) => !named.includes(c));
  t.same(gone, [], 'every KNOWN_CIRCLES entry still exists (delete the ones that are gone)');
});

/**
 * The layers of docs/ARCHITECTURE.md, as rules on direct imports: [files, what they may not import,
 * why]. Paths are relative to the repository; a rule names folders by prefix and files exactly.
 */
/**
 * Sink encoders that are pure (no I/O, no sink state), so the lane owner workers run them: PostgreSQL's
 * COPY tuples, and the Kafka sink's records with the Kafka wire pieces they are made of.
 */
const PURE_ENCODERS = [
  'src/sinks/postgres/tuples.ts', 'src/sinks/postgres/encode.ts', 'src/sinks/postgres/identity.ts',
  'src/sinks/kafka/row-records.ts', 'src/kafka/varint.ts', 'src/kafka/crc32c.ts', 'src/kafka/partitioner.ts', 'src/kafka/requests.ts',
];
const LAYERS: ReadonlyArray<readonly [string, readonly string[], string]> = [
  ['workers/', ['src/'], 'the worker entry imports only src/core and src/windows'],
  ['src/core/', ['src/', 'workers/'], 'src/core is pure and shared with the workers'],
  ['src/windows/', ['src/', 'workers/'], 'src/windows is pure: the workers format rows and own lanes with it (the commit contracts it names depend on nothing)'],
  ['src/commit/', ['src/', 'workers/'], 'the commit contracts depend on nothing'],
  ['src/sources/', ['src/sinks/', 'src/pipeline.ts'], 'sources know nothing of sinks (contracts: src/commit)'],
  ['src/sinks/', ['src/sources/', 'src/engine/', 'src/pipeline.ts'], 'sinks know nothing of sources or the engine'],
  ['src/engine/', ['src/sources/', 'src/sinks/', 'src/pipeline.ts'], 'the engine knows sources and sinks by their contracts only'],
  // The wire encoders run in the lane owners (rows in, COPY tuples or Kafka records out): as pure as src/windows.
  ...PURE_ENCODERS.map((f) => [f, ['src/', 'workers/'], 'a wire encoder the lane owners run imports only src/core, src/windows and the other pure encoders'] as const),
];
/** Imports a rule allows although its prefix forbids them. */
const ALLOWED = new Set([
  ...PURE_ENCODERS.flatMap((f) => [`src/windows/->${f}`, `${f}->src/core/`, `${f}->src/windows/`, ...PURE_ENCODERS.map((g) => `${f}->${g}`)]),
'workers/->src/core/', 'workers/->src/windows/', 'src/core/->src/core/', 'src/windows/->src/core/', 'src/windows/->src/windows/', 'src/windows/->src/commit/types.ts', 'src/commit/->src/commit/', 'src/sinks/->src/sinks/', 'src/engine/->src/sources/types.ts', 'src/engine/->src/sinks/types.ts', 'src/sources/->src/sources/']);

function allowed(rule: string, to: string): boolean {
  for (const a of ALLOWED) {
    const [from, target] = a.split('->') as [string, string];
    if (from === rule && (target.endsWith('/') ? to.startsWith(target) : to === target)) return true;
  }
  return false;
}

t.test('imports follow the layers: sources and sinks never import each other, workers only src/core and src/windows', async (t) => {
  const files = [...tsFiles(join(ROOT, 'src')), ...tsFiles(join(ROOT, 'workers'))];
  const graph = importGraph(files, (p) => readFileSync(p, 'utf8'));
  const broken: string[] = [];
  for (const [from, deps] of graph) {
    const f = relative(ROOT, from);
    for (const [prefix, forbidden, why] of LAYERS) {
      if (!f.startsWith(prefix)) continue;
      for (const d of deps.map((x) => relative(ROOT, x))) {
        if (forbidden.some((x) => (x.endsWith('/') ? d.startsWith(x) : d === x)) && !allowed(prefix, d)) broken.push(`${f} imports ${d}: ${why}`);
      }
    }
  }
  t.same(broken, [], broken.length === 0 ? 'every import goes downward' : broken.join('\n'));
});
