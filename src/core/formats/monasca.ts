// Monasca envelope: {"metric":{name,dimensions,timestamp,value,value_meta},"meta":{tenantId,region},"creation_time"}
import { RecordError, dimValue, isPlainObject, own, requireEpochMs, requireName, requireValue, show, type SampleRecord } from '../record.js';

export function extractMonasca(obj: Record<string, unknown>, out: SampleRecord, maxDims: number): void {
  const metric = own(obj, 'metric');
  if (metric === undefined || metric === null) throw new RecordError('missing_field', 'metric: missing (an object is required)');
  if (!isPlainObject(metric)) throw new RecordError('wrong_type', `metric: expected an object, got ${show(metric)}`);
  out.name = requireName(own(metric, 'name'), 'metric.name');
  out.value = requireValue(own(metric, 'value'), 'metric.value');
  const ts = own(metric, 'timestamp');
  if (typeof ts !== 'number' && ts !== undefined && ts !== null) {
    throw new RecordError('wrong_type', `metric.timestamp: expected ms since the epoch, got ${show(ts)}`);
  }
  out.tsMs = requireEpochMs(ts, 'metric.timestamp');
  out.unit = null;
  const dims = out.dims;
  dims.length = 0;
  const d = own(metric, 'dimensions');
  if (d !== undefined && d !== null) {
    if (!isPlainObject(d)) throw new RecordError('wrong_type', `metric.dimensions: expected an object, got ${show(d)}`);
    for (const k in d) {
      if (dims.length >= maxDims) {
        throw new RecordError('too_many_dimensions', `metric.dimensions: more than ${maxDims} dimensions (MAX_DIMENSIONS)`);
      }
      dims.push([k, dimValue(d[k], `metric.dimensions.${k}`)]);
    }
  }
  const meta = own(obj, 'meta');
  if (isPlainObject(meta)) {
    const tenant = own(meta, 'tenantId');
    if (tenant !== undefined && tenant !== null) dims.push(['_tenant_id', dimValue(tenant, 'meta.tenantId')]);
    const region = own(meta, 'region');
    if (region !== undefined && region !== null) dims.push(['_region', dimValue(region, 'meta.region')]);
  }
}
