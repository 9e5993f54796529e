// Ceilometer sample: counter_name, counter_volume, counter_unit, counter_type, resource_id, project_id,
// user_id, source, timestamp (ISO 8601, UTC when no offset), resource_metadata.
import {
  dimValue, isPlainObject, optionalUnit, own, parseIsoTimestamp, requireName, requireValue, requireWindowEnd, type FieldLimits, type SampleRecord,
} from '../record.js';

/** counter_type (gauge, delta, cumulative) is one per meter: kept, it is the Meter's type, and it splits no series. */
const DIMENSION_FIELDS = ['resource_id', 'project_id', 'user_id', 'source', 'counter_type'] as const;

/**
 * The dimension a project token of the statistics API is scoped by. A Ceilometer sample's project_id is
 * its tenant (Ceilometer scopes a project's queries by it), so it is stored under this name too; taken
 * only from project_id, never from a field of the sample called _tenant_id (which is not read).
 */
const TENANT = '_tenant_id';

export type MetadataKeys = ReadonlyArray<{ readonly name: string; readonly path: readonly string[] }>;

export function extractCeilometer(obj: Record<string, unknown>, out: SampleRecord, lim: FieldLimits, metadata: MetadataKeys): void {
  out.name = requireName(own(obj, 'counter_name'), 'counter_name', lim);
  out.value = requireValue(own(obj, 'counter_volume'), 'counter_volume');
  out.tsMs = requireWindowEnd(parseIsoTimestamp(own(obj, 'timestamp'), 'timestamp'), 'timestamp', lim);
  out.unit = optionalUnit(own(obj, 'counter_unit'), 'counter_unit', lim);
  const dims = out.dims;
  dims.length = 0;
  for (const f of DIMENSION_FIELDS) {
    const v = own(obj, f);
    if (v === undefined || v === null) continue;
    const value = dimValue(v, f, lim);
    dims.push([f, value]);
    if (f === 'project_id') dims.push([TENANT, value]);
  }
  if (metadata.length > 0) keepMetadata(own(obj, 'resource_metadata'), dims, metadata, lim);
}

/**
 * The resource_metadata keys CEILOMETER_METADATA names, as dimensions resource_metadata.KEY (what
 * Ceilometer's metadata.KEY filters and resource_metadata.KEY groupby read). A key that is absent,
 * null, or not a string, number or boolean adds nothing: metadata varies by resource, and a sample
 * is not refused for it.
 */
function keepMetadata(md: unknown, dims: Array<[string, string]>, keys: MetadataKeys, lim: FieldLimits): void {
  if (!isPlainObject(md)) return;
  for (const k of keys) {
    let v: unknown = md;
    for (const seg of k.path) v = isPlainObject(v) ? own(v, seg) : undefined;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') dims.push([k.name, dimValue(v, k.name, lim)]);
  }
}
