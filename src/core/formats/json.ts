// Any JSON object, mapped by paths from the configuration (e.g. xAPI statements counted per verb.id).
import {
  RecordError, dimValue, isPlainObject, optionalUnit, own, requireEpochMs, requireName, requireValue, requireWindowEnd, type FieldLimits, type SampleRecord,
} from '../record.js';
import type { FieldRef, JsonMapping } from './spec.js';

export type { FieldRef, JsonMapping } from './spec.js';

export function getPath(obj: unknown, path: readonly string[]): unknown {
  let cur: unknown = obj;
  for (const seg of path) {
    if (Array.isArray(cur)) {
      const i = Number(seg);
      cur = Number.isInteger(i) && i >= 0 ? cur[i] : undefined;
    } else if (isPlainObject(cur)) {
      cur = own(cur, seg);
    } else {
      return undefined;
    }
  }
  return cur;
}

function read(obj: Record<string, unknown>, ref: FieldRef): unknown {
  return 'constant' in ref ? ref.constant : getPath(obj, ref.path);
}

function where(ref: FieldRef): string {
  return 'constant' in ref ? 'constant' : ref.text;
}

// Dimension names come from JSON_DIMENSIONS and are checked with the configuration.
export function extractJson(obj: Record<string, unknown>, out: SampleRecord, m: JsonMapping, lim: FieldLimits): void {
  out.name = requireName(read(obj, m.name), where(m.name), lim);
  out.value = requireValue(read(obj, m.value), where(m.value));
  out.tsMs = requireWindowEnd(requireEpochMs(getPath(obj, m.timestamp.path), m.timestamp.text), m.timestamp.text, lim);
  out.unit = m.unit === null ? null : optionalUnit(read(obj, m.unit), where(m.unit), lim);
  const dims = out.dims;
  dims.length = 0;
  const maxDims = lim.maxDimensions;
  for (const d of m.dimensions) {
    const v = getPath(obj, d.path);
    if (v === undefined || v === null) continue;
    if (dims.length >= maxDims) throw new RecordError('too_many_dimensions', `${d.text}: more than ${maxDims} dimensions (MAX_DIMENSIONS)`);
    dims.push([d.name, dimValue(v, d.text, lim)]);
  }
}
