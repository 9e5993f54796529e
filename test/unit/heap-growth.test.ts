// boundHeapGrowth: the engine sets V8's heap growing factor for its own process unless the launch gave
// one. deferWorkerCollections: the workers' heaps start with room for their garbage.
import t from 'tap';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { MAIN_HEAP_DEFAULTS, MAIN_HEAP_FLAGS } from '../../src/config/main-heap.js';
import { boundHeapGrowth, deferWorkerCollections, WORKER_INITIAL_OLD_SPACE_MB, workerInitialOldSpaceMb } from '../../src/config/memory.js';

t.test('a --heap-growing-percent given at launch is kept', async (t) => {
  t.equal(boundHeapGrowth(['--heap-growing-percent=50'], ''), false, 'on the node command line');
  t.equal(boundHeapGrowth([], '--max-old-space-size=512 --heap_growing_percent=50'), false, 'in NODE_OPTIONS, either spelling');
});

t.test('otherwise it is set', async (t) => {
  t.equal(boundHeapGrowth(['--enable-source-maps'], '--max-old-space-size=512'), true);
});

t.test("a worker's initial old space: WORKER_INITIAL_OLD_SPACE_MB, at most half its limit", async (t) => {
  t.equal(workerInitialOldSpaceMb(512), WORKER_INITIAL_OLD_SPACE_MB);
  t.equal(workerInitialOldSpaceMb(128), 64);
  t.equal(workerInitialOldSpaceMb(100), 50, 'a limit under twice the default halves it');
  t.equal(workerInitialOldSpaceMb(17), 8, 'rounded down');
  t.equal(deferWorkerCollections(512, ['--initial-old-space-size=16']), false, 'a launch flag is kept');
  t.equal(deferWorkerCollections(512, ['--initial_old_space_size=16']), false, 'either spelling');
  // The bin's relaunch sized the main heap with a flag of its own: the workers still get theirs.
  t.equal(deferWorkerCollections(512, [...MAIN_HEAP_FLAGS]), true, 'the relaunch flag is not a user\'s');
  t.equal(deferWorkerCollections(512, [`--initial-old-space-size=${MAIN_HEAP_DEFAULTS.initialOldSpaceMb + 1}`]), false);
});

t.test('a worker made after deferWorkerCollections runs no full collection for its garbage; one made without it does', async (t) => {
  const probe = fileURLToPath(new URL('../fixtures/worker-gc-probe.js', import.meta.url));
  const run = async (arg: string[]): Promise<number> => {
    const { stdout } = await promisify(execFile)(process.execPath, [probe, ...arg], { timeout: 60_000 });
    return (JSON.parse(stdout) as { full: number }).full;
  };
  const deferred = await run(['defer']);
  const plain = await run([]);
  t.equal(deferred, 0, `deferred: ${deferred} full collections`);
  t.ok(plain > 0, `without it: ${plain} full collections`);
});
