// Ceilometer sample: counter_name, counter_volume, counter_unit, counter_type, resource_id, project_id,
// user_id, source, timestamp (ISO 8601, UTC when no offset), resource_metadata.
import { RecordError, dimValue, own, parseIsoTimestamp, requireName, requireValue, show, type SampleRecord } from '../record.js';

const DIMENSION_FIELDS = ['resource_id', 'project_id', 'user_id', 'source'] as const;

export function extractCeilometer(obj: Record<string, unknown>, out: SampleRecord): void {
  out.name = requireName(own(obj, 'counter_name'), 'counter_name');
  out.value = requireValue(own(obj, 'counter_volume'), 'counter_volume');
  out.tsMs = parseIsoTimestamp(own(obj, 'timestamp'), 'timestamp');
  const unit = own(obj, 'counter_unit');
  if (unit !== undefined && unit !== null && typeof unit !== 'string') {
    throw new RecordError('wrong_type', `counter_unit: expected a string, got ${show(unit)}`);
  }
  out.unit = unit ?? null;
  const dims = out.dims;
  dims.length = 0;
  for (const f of DIMENSION_FIELDS) {
    const v = own(obj, f);
    if (v !== undefined && v !== null) dims.push([f, dimValue(v, f)]);
  }
}
