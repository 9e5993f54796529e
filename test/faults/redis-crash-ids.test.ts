// kill -9 of the engine consuming a stream of ids past 4096 a millisecond (XADD <ms>-*) into
// PostgreSQL: each restart places every entry where the run before did (the lane's position segments
// are stored before their entries go on), so the store ends equal to the independent computation.
import t from 'tap';
import { killAndRestart } from '../fixtures/redis-crash.js';

t.test('ids past 4096 a millisecond (XADD <ms>-*): kill -9 and restart place every entry where it was, the store equals the computation', (t) =>
  killAndRestart(t, 3, 33, async (redis, stream, values) => {
    // Bursts of 7,000 entries a millisecond, one after another: a segment starts at each new millisecond.
    for (let i = 0; i < values.length; i += 500) {
      await Promise.all(values.slice(i, i + 500).map((v, j) => redis.sendCommand(['XADD', stream, `${1_000 + Math.floor((i + j) / 7000)}-*`, 'data', v])));
    }
  }));

