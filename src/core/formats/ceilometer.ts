// Ceilometer sample: counter_name, counter_volume, counter_unit, counter_type, resource_id, project_id,
// user_id, source, timestamp (ISO 8601, UTC when no offset), resource_metadata.
import {
  dimValue, optionalUnit, own, parseIsoTimestamp, requireName, requireValue, requireWindowEnd, type FieldLimits, type SampleRecord,
} from '../record.js';

const DIMENSION_FIELDS = ['resource_id', 'project_id', 'user_id', 'source'] as const;

export function extractCeilometer(obj: Record<string, unknown>, out: SampleRecord, lim: FieldLimits): void {
  out.name = requireName(own(obj, 'counter_name'), 'counter_name', lim);
  out.value = requireValue(own(obj, 'counter_volume'), 'counter_volume');
  out.tsMs = requireWindowEnd(parseIsoTimestamp(own(obj, 'timestamp'), 'timestamp'), 'timestamp', lim);
  out.unit = optionalUnit(own(obj, 'counter_unit'), 'counter_unit', lim);
  const dims = out.dims;
  dims.length = 0;
  for (const f of DIMENSION_FIELDS) {
    const v = own(obj, f);
    if (v !== undefined && v !== null) dims.push([f, dimValue(v, f, lim)]);
  }
}
