// Writes the part of docker-compose.yml that runs on this machine, for scripts/image.sh: the two
// services of our own image (streamstats and producer) as the file defines them, changed only where
// this machine differs from a laptop with Docker:
//   - the image built by the check instead of `build: .` (built already, by buildah);
//   - network_mode: host and no `ports:`, since the broker and PostgreSQL are the machine's
//     (127.0.0.1), not the file's kafka and postgres services, whose images cannot be had here;
//     so no depends_on on them either;
//   - a topic, group, database schema and ports of the check's own in the environment, and GEN_START
//     fixed (podman-compose 1.0.3 passes `${GEN_START:-}` through literally);
//   - the GEN_COUNT of the check.
// Everything else (entrypoints, healthcheck settings, cpus, volumes, restart, stop_grace_period,
// the other variables) is the file's.
//
//   node scripts/compose-podman.mjs COMPOSE IMAGE BROKERS TOPIC PG_URL METRICS_PORT API_PORT GEN_COUNT > compose.yml
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';

const [file, image, brokers, topic, pgUrl, metricsPort, apiPort, count] = process.argv.slice(2);
if (!count) throw new Error('usage: compose-podman.mjs COMPOSE IMAGE BROKERS TOPIC PG_URL METRICS_PORT API_PORT GEN_COUNT');

// The document, not plain data: the file's own scalars stay as written (restart: "no" must stay a
// string, which a plain re-dump would turn into YAML 1.1's boolean no).
const doc = parseDocument(readFileSync(file, 'utf8'));
const services = doc.get('services');
const ours = services.items.filter((p) => p.value.has('build')).map((p) => String(p.key));
if (ours.join(',') !== 'streamstats,producer') {
  throw new Error(`${file}: the services built from the Dockerfile are ${ours.join(', ')}, not streamstats and producer`);
}
for (const name of services.items.map((p) => String(p.key))) if (!ours.includes(name)) services.delete(name);
const set = {
  KAFKA_BROKERS: brokers,
  KAFKA_TOPICS: topic,
  KAFKA_GROUP_ID: `${topic}-compose`,
  SINK: pgUrl,
  DLQ_TOPIC: `${topic}-dead-letter`,
  METRICS_PORT: metricsPort,
  API_PORT: apiPort,
  GEN_COUNT: count,
  GEN_START: '2020-02-11T12:42:13Z',
};
for (const name of ours) {
  const s = services.get(name);
  s.delete('build');
  s.delete('ports');
  s.delete('depends_on');
  s.set('image', image);
  s.set('network_mode', 'host');
  const env = s.get('environment');
  for (const key of Object.keys(set)) if (env.has(key)) env.set(key, set[key]);
}
const used = new Set(ours.flatMap((n) => (services.get(n).toJSON().volumes ?? []).map((v) => v.split(':')[0])));
for (const v of doc.get('volumes').items.map((p) => String(p.key))) if (!used.has(v)) doc.get('volumes').delete(v);
process.stdout.write(doc.toString({ lineWidth: 0 }));
