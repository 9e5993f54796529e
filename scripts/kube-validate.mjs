// Validates Kubernetes manifests offline with two tools generated from the Kubernetes API's OpenAPI
// document, as an API server would before admitting them:
//   - kubernetes-models: each object against its JSON schema (types, enums, required fields, formats);
//   - @kubernetes/client-node: each object decoded into the client's typed models and encoded back;
//     a field the models do not know is lost on the way, which is what the API server's strict field
//     validation refuses (a typo such as readOnlyRootFilesystm would otherwise pass silently).
// scripts/image.sh installs both into its cache folder and runs this file from there:
//   node kube-validate.mjs FILE...   one line per object; exit 1 if any is invalid.
import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';
import * as k8s from '@kubernetes/client-node';

/** Paths present in `given` and missing from `decoded`. */
function lostFields(given, decoded, path, out) {
  if (given === null || typeof given !== 'object') return out;
  for (const key of Object.keys(given)) {
    const at = `${path}.${key}`;
    if (decoded === null || typeof decoded !== 'object' || !(key in decoded)) out.push(at);
    else lostFields(given[key], decoded[key], at, out);
  }
  return out;
}

async function validateSchema(obj) {
  const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : [null, obj.apiVersion];
  let mod;
  try {
    mod = await import(`kubernetes-models/${group ? `${group}/` : ''}${version}/${obj.kind}`);
  } catch {
    return [`no schema for ${obj.apiVersion} ${obj.kind}`];
  }
  try {
    new mod[obj.kind](obj).validate();
    return [];
  } catch (err) {
    return String(err.message).split(', ');
  }
}

let bad = 0;
for (const file of process.argv.slice(2)) {
  const text = readFileSync(file, 'utf8');
  const given = yaml.loadAll(text).filter((o) => o !== null && o !== undefined).map((o) => JSON.parse(JSON.stringify(o)));
  const decoded = k8s.loadAllYaml(text).filter((o) => o !== null && o !== undefined).map((o) => yaml.load(k8s.dumpYaml(o)));
  for (const [i, obj] of given.entries()) {
    const name = `${file}: ${obj.kind} ${obj.metadata?.name ?? '?'}`;
    const problems = [
      ...(await validateSchema(obj)),
      ...lostFields(obj, decoded[i], '', []).map((p) => `${p.slice(1)}: unknown field`),
    ];
    if (problems.length > 0) {
      bad += 1;
      console.log(`invalid ${name}: ${problems.join('; ')}`);
    } else {
      console.log(`valid ${name}`);
    }
  }
}
process.exitCode = bad > 0 ? 1 : 0;
