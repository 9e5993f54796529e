// `npm test`: build, make sure a Kafka broker is there (KAFKA_BROKERS, or the local one from
// scripts/kafka.sh, started here and stopped after), then run tap with any arguments given.
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });

if (run('npx', ['tsc', '-p', 'tsconfig.json']).status !== 0) process.exit(1);

let started = false;
if (!process.env.KAFKA_BROKERS) {
  const r = spawnSync('bash', ['scripts/kafka.sh', 'start'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) {
    process.stderr.write('npm test: the Kafka tests need a broker: set KAFKA_BROKERS, or let scripts/kafka.sh start one (needs Java 17 and Maven)\n');
    process.exit(1);
  }
  process.env.KAFKA_BROKERS = r.stdout.trim().split('\n').pop();
  started = true;
}

const stop = () => {
  if (started) spawnSync('bash', ['scripts/kafka.sh', 'stop'], { cwd: root, stdio: 'ignore' });
  started = false;
};
const tap = spawn('npx', ['tap', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit', env: process.env });
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => tap.kill(sig));
tap.on('close', (code) => {
  stop();
  process.exit(code ?? 1);
});
