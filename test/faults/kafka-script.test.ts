// scripts/kafka.sh never deletes a broker's data on a failed start. After a kill -9 a start once failed
// ("No readable meta.properties") and its cleanup then deleted the broker's data. On a broker of the
// test's own (privateBroker: its own run dir and ports, never the shared one): kill -9, then a start
// the broker refuses (meta.properties of another node), and a start over a meta.properties a kill -9
// left empty; the data is there after both.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { privateBroker } from '../fixtures/faults.js';

const SCRIPT = fileURLToPath(new URL('../../../scripts/kafka.sh', import.meta.url));

function killNine(pid: number): void {
  process.kill(pid, 'SIGKILL');
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    spawnSync('sleep', ['0.1']);
  }
}

/** Pids of the JVMs running kafka.Kafka with the run dir's server.properties. */
function brokersOf(runDir: string): string[] {
  const ps = spawnSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' }).stdout;
  return ps.split('\n').filter((l) => l.includes('kafka.Kafka') && l.includes(runDir)).map((l) => l.trim().split(/\s+/)[0]!);
}

t.test('a failed start after kill -9 keeps the broker\'s data', async (t) => {
  const b = await privateBroker(t);
  const env = { ...process.env, KAFKA_RUN_DIR: b.runDir, KAFKA_PORT: b.brokers[0]!.split(':')[1]!, KAFKA_CONTROLLER_PORT: readFileSync(join(b.runDir, 'server.properties'), 'utf8').match(/CONTROLLER:\/\/[^:]+:(\d+)/)![1]!, KAFKA_KEEP_DATA: '1', KAFKA_START_TIMEOUT: '60', KAFKA_HEAP_OPTS: '-Xms128m -Xmx512m' };
  const start = () => spawnSync('bash', [SCRIPT, 'start'], { env, encoding: 'utf8', timeout: 150_000 });
  const dataDir = readFileSync(join(b.runDir, 'data-dir'), 'utf8').trim();
  const meta = join(dataDir, 'meta.properties');
  const before = readdirSync(dataDir).sort();
  t.ok(before.includes('__cluster_metadata-0'), `the broker's data: ${before.join(' ')}`);
  const original = readFileSync(meta, 'utf8');

  killNine(Number(readFileSync(join(b.runDir, 'kafka.pid'), 'utf8')));
  // A meta.properties the broker refuses at start (another node's): the broker exits during startup.
  writeFileSync(meta, original.replace(/node\.id=\d+/, 'node.id=77'));
  const refused = start();
  t.not(refused.status, 0, 'the start fails');
  t.match(refused.stderr, /exited during startup; its data is kept/);
  t.ok(existsSync(dataDir), 'the data dir is still there');
  t.same(readdirSync(dataDir).sort(), before, 'with everything in it');
  // The failed start waited for its own broker to exit: none is left to start late on data put back
  // (a start once read a killed broker's pid file as its own, returned at once, and left its JVM running).
  t.same(brokersOf(b.runDir), [], 'no broker of this run dir is left running');

  // A meta.properties a kill -9 left empty: the start refuses before formatting or deleting anything.
  writeFileSync(meta, '');
  const empty = start();
  t.not(empty.status, 0);
  t.match(empty.stderr, /no readable meta\.properties; not starting over it and not deleting it/);
  t.same(readdirSync(dataDir).sort(), before, 'the data is still all there');

  // Put back, the broker starts on its own data again.
  writeFileSync(meta, original);
  const again = start();
  t.equal(again.status, 0, `starts again on the kept data: ${again.stderr.slice(-500)}`);
  t.equal(readFileSync(join(b.runDir, 'data-dir'), 'utf8').trim(), dataDir, 'the same data dir');
});
