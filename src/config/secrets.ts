// Redaction driven by the table's `secret` marks: each mark names where its value sits in Config.
// redactedConfig() is the config for the start-up log; configSecrets() the values runCli and the
// logger keep out of every line (errors, the summary), whatever text they turn up in.
import { OPTIONS, type OptionSpec, type SecretMark } from './options.js';
import { REDACTED_VALUE, redactSecrets, redactUrl, urlCredentials } from './redact.js';

const MARKS: readonly SecretMark[] = (OPTIONS as readonly OptionSpec[]).flatMap((o) => (o.secret === undefined ? [] : [o.secret]));

function valueAt(root: unknown, path: string): unknown {
  let v = root;
  for (const k of path.split('.')) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

function setAt(root: unknown, path: string, value: unknown): void {
  const keys = path.split('.');
  const parent = valueAt(root, keys.slice(0, -1).join('.'));
  if (parent !== null && typeof parent === 'object') (parent as Record<string, unknown>)[keys[keys.length - 1]!] = value;
}

/** A parsed secret that is no string (a token table) lists its secret strings itself. */
interface HoldsSecrets {
  secretValues(): readonly string[];
}

function holdsSecrets(v: unknown): v is HoldsSecrets {
  return v !== null && typeof v === 'object' && typeof (v as Partial<HoldsSecrets>).secretValues === 'function';
}

/** The secret values a config holds (a URL gives its credentials, decoded), for redactSecrets. */
export function configSecrets(config: object): string[] {
  return MARKS.flatMap((m) => {
    const v = valueAt(config, m.at);
    if (holdsSecrets(v)) return [...v.secretValues()];
    if (typeof v !== 'string' || v === '') return [];
    return m.kind === 'url' ? urlCredentials(v) : [v];
  });
}

/** Every string inside `value` with URLs and `secrets` redacted (a copy; JSON-shaped values). */
export function redactDeep<T>(value: T, secrets: readonly string[]): T {
  return JSON.parse(JSON.stringify(value), (_k, v: unknown) => (typeof v === 'string' ? redactSecrets(v, secrets) : v)) as T;
}

/** The effective config for the start-up log: secrets out, PEM contents (bulky, not secret) shortened. */
export function redactedConfig(config: object): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(config), (_k, v: unknown) => (typeof v === 'string' && v.startsWith('-----BEGIN') ? '[pem]' : v)) as Record<string, unknown>;
  for (const m of MARKS) {
    const v = valueAt(copy, m.at);
    if (typeof v === 'string' && v !== '') setAt(copy, m.at, m.kind === 'url' ? redactUrl(v) : REDACTED_VALUE);
  }
  return redactDeep(copy, configSecrets(config)) as Record<string, unknown>;
}
