// boundHeapGrowth: the engine sets V8's heap growing factor for its own process unless the launch gave one.
import t from 'tap';
import { boundHeapGrowth } from '../../src/config/memory.js';

t.test('a --heap-growing-percent given at launch is kept', async (t) => {
  t.equal(boundHeapGrowth(['--heap-growing-percent=50'], ''), false, 'on the node command line');
  t.equal(boundHeapGrowth([], '--max-old-space-size=512 --heap_growing_percent=50'), false, 'in NODE_OPTIONS, either spelling');
});

t.test('otherwise it is set', async (t) => {
  t.equal(boundHeapGrowth(['--enable-source-maps'], '--max-old-space-size=512'), true);
});
