// Any JSON object, mapped by paths from the configuration (e.g. xAPI statements counted per verb.id).
import { RecordError, dimValue, isPlainObject, own, requireEpochMs, requireName, requireValue, show, type SampleRecord } from '../record.js';

/** A field read from a path ("verb.id", "items.0.price") or a constant. */
export type FieldRef = { readonly path: readonly string[]; readonly text: string } | { readonly constant: string | number };

export interface JsonMapping {
  readonly name: FieldRef;
  readonly value: FieldRef;
  readonly timestamp: { readonly path: readonly string[]; readonly text: string };
  readonly unit: FieldRef | null;
  readonly dimensions: ReadonlyArray<{ readonly name: string; readonly path: readonly string[]; readonly text: string }>;
}

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

export function extractJson(obj: Record<string, unknown>, out: SampleRecord, m: JsonMapping, maxDims: number): void {
  out.name = requireName(read(obj, m.name), where(m.name));
  out.value = requireValue(read(obj, m.value), where(m.value));
  out.tsMs = requireEpochMs(getPath(obj, m.timestamp.path), m.timestamp.text);
  if (m.unit === null) {
    out.unit = null;
  } else {
    const u = read(obj, m.unit);
    if (u !== undefined && u !== null && typeof u !== 'string') {
      throw new RecordError('wrong_type', `${where(m.unit)}: expected a string, got ${show(u)}`);
    }
    out.unit = u ?? null;
  }
  const dims = out.dims;
  dims.length = 0;
  for (const d of m.dimensions) {
    const v = getPath(obj, d.path);
    if (v === undefined || v === null) continue;
    if (dims.length >= maxDims) throw new RecordError('too_many_dimensions', `${d.text}: more than ${maxDims} dimensions (MAX_DIMENSIONS)`);
    dims.push([d.name, dimValue(v, d.text)]);
  }
}
