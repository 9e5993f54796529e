// Writes the variant of deploy/kubernetes/streamstats.yaml that `podman kube play` (podman 4.3) can
// start on this machine, for scripts/image.sh. What changes, and why; nothing else does:
//   - the values the manifest says to change (the image, KAFKA_BROKERS) and a topic, group and ports
//     of the check's own; one API token in the token file (as shipped it holds none, on purpose);
//   - not in the file: the Secret streamstats-postgres the manifest says to create (image.sh makes it
//     with `podman secret create`, as podman 4.3 cannot read the value of a Secret played from YAML);
//   - hostNetwork: true, to reach the broker at the address it advertises (127.0.0.1), and so no
//     `ports:` (podman 4.3 refuses port mappings with host networking); the probes' named ports
//     are resolved to their numbers first;
//   - the token file mounted from a ConfigMap of the same name and key instead of the Secret:
//     podman 4.3 panics on secret volumes (a nil secrets manager in VolumeFromSecret);
//   - no Service (podman plays Pods, Deployments, ConfigMaps, Secrets and volumes only).
// The probes are printed to stderr as "liveness|readiness PATH PORT" lines for the check to ask.
//
//   node scripts/kube-podman.mjs MANIFEST IMAGE BROKERS TOPIC METRICS_PORT API_PORT TOKEN > play.yaml
import { readFileSync } from 'node:fs';
import { parseAllDocuments, stringify } from 'yaml';

const [file, image, brokers, topic, metricsPort, apiPort, token] = process.argv.slice(2);
if (!token) throw new Error('usage: kube-podman.mjs MANIFEST IMAGE BROKERS TOPIC METRICS_PORT API_PORT TOKEN');

const docs = parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS());
const deployment = docs.find((d) => d.kind === 'Deployment');
const tokens = docs.find((d) => d.kind === 'Secret' && d.metadata.name === 'streamstats-api-tokens');
if (!deployment || !tokens) throw new Error(`${file}: no Deployment or no Secret streamstats-api-tokens`);
const pod = deployment.spec.template.spec;
const [container] = pod.containers;

const newPort = { [container.env.find((e) => e.name === 'METRICS_PORT').value]: Number(metricsPort), [container.env.find((e) => e.name === 'API_PORT').value]: Number(apiPort) };
const set = { KAFKA_BROKERS: brokers, KAFKA_TOPICS: topic, KAFKA_GROUP_ID: `${topic}-kube`, METRICS_PORT: metricsPort, API_PORT: apiPort };
for (const e of container.env) if (e.name in set) e.value = set[e.name];
container.image = image;

const portByName = Object.fromEntries(container.ports.map((p) => [p.name, p.containerPort]));
for (const kind of ['liveness', 'readiness']) {
  const get = container[`${kind}Probe`].httpGet;
  const number = typeof get.port === 'number' ? get.port : portByName[get.port];
  if (!(number in newPort)) throw new Error(`${kind}Probe: port ${get.port} is neither METRICS_PORT nor API_PORT`);
  get.port = newPort[number];
  process.stderr.write(`${kind} ${get.path} ${get.port}\n`);
}
delete container.ports;
pod.hostNetwork = true;

const volume = pod.volumes.find((v) => v.secret?.secretName === tokens.metadata.name);
if (!volume) throw new Error(`${file}: no volume of the Secret ${tokens.metadata.name}`);
volume.configMap = { name: volume.secret.secretName, defaultMode: volume.secret.defaultMode };
delete volume.secret;
const tokenMap = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: tokens.metadata,
  data: { tokens: `${tokens.stringData.tokens}${token} admin\n` },
};
process.stdout.write([tokenMap, deployment].map((d) => stringify(d)).join('---\n'));
