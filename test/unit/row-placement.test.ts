// Rows go to a worker while the main thread is the busier side, and come back when the workers are.
import t from 'tap';
import { RowPlacement } from '../../src/engine/placement.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // The main thread busy, as a job whose workers wait for it.
  }
}

t.test('auto: follows which side is busier, span by span', async (t) => {
  // Event-loop utilisation reads zero before the loop's first turn: measure from within it, as the engine does.
  await sleep(5);
  const pool = { workerBusySeconds: 0, threads: 2, formatsRows: true };
  const p = new RowPlacement(pool, 'auto', 100);
  t.notOk(p.inWorker(), 'nothing measured yet: the main thread formats');
  spin(150);
  t.ok(p.inWorker(), 'main thread busy, workers idle: in a worker');
  await sleep(150);
  pool.workerBusySeconds += 0.28; // both workers busy for the span
  t.notOk(p.inWorker(), 'workers busy, main thread idle: on the main thread');
  t.notOk(p.inWorker(), 'and within the span, the choice stands');
  spin(150);
  pool.workerBusySeconds += 0.2; // about two thirds of both workers' time: no room to spare
  t.notOk(p.inWorker(), 'main thread busy, but the workers more than half busy: stays on the main thread');
  pool.formatsRows = false;
  spin(150);
  t.notOk(p.inWorker(), 'a pool that cannot format (closing, in-thread): never');
});

t.test('pinned modes', async (t) => {
  const pool = { workerBusySeconds: 0, threads: 1, formatsRows: true };
  t.ok(new RowPlacement(pool, 'worker').inWorker());
  t.notOk(new RowPlacement(pool, 'main').inWorker());
  t.notOk(new RowPlacement({ ...pool, threads: 0 }, 'worker').inWorker(), 'in-thread: nowhere else');
});
