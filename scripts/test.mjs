// `npm test`: build, make sure a Kafka broker is there (KAFKA_BROKERS, or the local one from
// scripts/kafka.sh: started here and stopped after, or, when it was running already, used and left
// running), then run tap with any arguments given.
// `npm run test:faults` (--faults): the long fault-injection suite in test/faults instead.
// --no-build skips the build, for a caller that has just built (CI runs test:faults after npm test).
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });

const argv = process.argv.slice(2);
const noBuild = argv.includes('--no-build');
if (!noBuild && run('npm', ['run', 'build', '--silent']).status !== 0) process.exit(1);

let started = false;
if (!process.env.KAFKA_BROKERS) {
  // A broker that was running before (a developer's, another checkout's test run) is used and left
  // running: stopping it at the end deleted its data under whoever else was using it.
  const before = spawnSync('bash', ['scripts/kafka.sh', 'status'], { cwd: root, encoding: 'utf8' });
  const wasRunning = !before.stdout.startsWith('not running');
  const r = spawnSync('bash', ['scripts/kafka.sh', 'start'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) {
    process.stderr.write('npm test: the Kafka tests need a broker: set KAFKA_BROKERS, or let scripts/kafka.sh start one (needs Java 17 and Maven)\n');
    process.exit(1);
  }
  process.env.KAFKA_BROKERS = r.stdout.trim().split('\n').pop();
  started = !wasRunning;
}

const stop = () => {
  if (started) spawnSync('bash', ['scripts/kafka.sh', 'stop'], { cwd: root, stdio: 'ignore' });
  started = false;
};
const args = argv.filter((a) => a !== '--no-build');
const faults = args[0] === '--faults';
const tapArgs = faults
  ? ['--include=dist/test/faults/**/*.test.js', '--exclude=**/fixtures/**', '--timeout=900', ...args.slice(1)]
  : args;
const tap = spawn('npx', ['tap', ...tapArgs], { cwd: root, stdio: 'inherit', env: process.env });
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => tap.kill(sig));
tap.on('close', (code) => {
  stop();
  process.exit(code ?? 1);
});
