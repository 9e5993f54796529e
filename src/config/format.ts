// FORMAT and its JSON mapping (JSON_NAME, JSON_VALUE, JSON_TIMESTAMP, JSON_UNIT, JSON_DIMENSIONS).
import type { FieldRef, FormatSpec, JsonMapping } from '../core/formats/index.js';
import type { OptionName } from './options.js';
import type { Reader } from './reader.js';

function parsePath(r: Reader, name: OptionName, s: string): string[] {
  const path = s.split('.');
  if (path.some((p) => p === '')) throw r.fail(name, s, 'a dotted path like verb.id (no empty segments) is allowed');
  return path;
}

function fieldRef(r: Reader, name: OptionName, s: string, numeric: boolean): FieldRef {
  if (s.startsWith('=')) {
    const c = s.slice(1);
    if (numeric) {
      const n = Number(c);
      if (c === '' || !Number.isFinite(n)) throw r.fail(name, s, 'a path or =NUMBER (e.g. =1) is allowed');
      return { constant: n };
    }
    if (c === '') throw r.fail(name, s, 'a path or =CONSTANT with a non-empty constant is allowed');
    return { constant: c };
  }
  return { path: parsePath(r, name, s), text: s };
}

function parseDimensions(r: Reader): JsonMapping['dimensions'] {
  const text = r.raw('JSON_DIMENSIONS');
  if (text === '') return [];
  return text.split(',').map((entry) => {
    const e = entry.trim();
    const eq = e.indexOf('=');
    const name = eq === -1 ? e : e.slice(0, eq).trim();
    const path = eq === -1 ? e : e.slice(eq + 1).trim();
    if (name === '') throw r.fail('JSON_DIMENSIONS', text, 'a comma list of NAME=PATH or PATH is allowed (empty name found)');
    if (path.split('.').some((p) => p === '')) {
      throw r.fail('JSON_DIMENSIONS', text, `entry ${JSON.stringify(e)} needs a dotted path like verb.id (no empty segments)`);
    }
    return { name, path: path.split('.'), text: path };
  });
}

/** CEILOMETER_METADATA: resource_metadata keys (dotted paths into it) kept as dimensions resource_metadata.KEY. */
function parseMetadata(r: Reader): Array<{ name: string; path: string[] }> {
  const text = r.raw('CEILOMETER_METADATA');
  if (text === '') return [];
  const keys = text.split(',').map((k) => k.trim());
  return keys.map((k, i) => {
    if (k === '' || k.split('.').some((p) => p === '')) throw r.fail('CEILOMETER_METADATA', text, 'a comma list of resource_metadata keys or dotted paths (instance_type,flavor.name) is allowed');
    if (keys.indexOf(k) !== i) throw r.fail('CEILOMETER_METADATA', text, `${JSON.stringify(k)} is given twice`);
    return { name: `resource_metadata.${k}`, path: k.split('.') };
  });
}

export function parseFormat(r: Reader): FormatSpec {
  const kind = r.get('FORMAT');
  const metadata = parseMetadata(r);
  if (metadata.length > 0 && kind !== 'ceilometer') throw r.fail('CEILOMETER_METADATA', r.raw('CEILOMETER_METADATA'), `it applies to FORMAT=ceilometer only (FORMAT is ${kind})`);
  if (kind === 'ceilometer') return metadata.length > 0 ? { kind, metadata } : { kind };
  if (kind !== 'json') return { kind };
  const name = r.raw('JSON_NAME');
  if (name === '') throw r.fail('JSON_NAME', name, 'FORMAT=json needs a path of the meter name or =CONSTANT');
  const ts = r.raw('JSON_TIMESTAMP');
  const unit = r.raw('JSON_UNIT');
  const mapping: JsonMapping = {
    name: fieldRef(r, 'JSON_NAME', name, false),
    value: fieldRef(r, 'JSON_VALUE', r.raw('JSON_VALUE'), true),
    timestamp: { path: parsePath(r, 'JSON_TIMESTAMP', ts), text: ts },
    unit: unit === '' ? null : fieldRef(r, 'JSON_UNIT', unit, false),
    dimensions: parseDimensions(r),
  };
  return { kind: 'json', mapping };
}
