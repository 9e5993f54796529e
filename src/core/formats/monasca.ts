// Monasca envelope: {"metric":{name,dimensions,timestamp,value,value_meta},"meta":{tenantId,region},"creation_time"}
import {
  RecordError, dimName, dimValue, isPlainObject, own, requireEpochMs, requireName, requireValue, requireWindowEnd, show,
  type FieldLimits, type SampleRecord,
} from '../record.js';

/** The dimension the statistics API scopes project tokens by. */
const TENANT_DIM = '_tenant_id';

export function extractMonasca(obj: Record<string, unknown>, out: SampleRecord, lim: FieldLimits): void {
  const metric = own(obj, 'metric');
  if (metric === undefined || metric === null) throw new RecordError('missing_field', 'metric: missing (an object is required)');
  if (!isPlainObject(metric)) throw new RecordError('wrong_type', `metric: expected an object, got ${show(metric)}`);
  out.name = requireName(own(metric, 'name'), 'metric.name', lim);
  out.value = requireValue(own(metric, 'value'), 'metric.value');
  const ts = own(metric, 'timestamp');
  if (typeof ts !== 'number' && ts !== undefined && ts !== null) {
    throw new RecordError('wrong_type', `metric.timestamp: expected ms since the epoch, got ${show(ts)}`);
  }
  out.tsMs = requireWindowEnd(requireEpochMs(ts, 'metric.timestamp'), 'metric.timestamp', lim);
  out.unit = null;
  const dims = out.dims;
  dims.length = 0;
  const maxDims = lim.maxDimensions;
  const d = own(metric, 'dimensions');
  if (d !== undefined && d !== null) {
    if (!isPlainObject(d)) throw new RecordError('wrong_type', `metric.dimensions: expected an object, got ${show(d)}`);
    for (const k in d) {
      // A tenant comes only from meta.tenantId (set by the Monasca API for the authenticated tenant):
      // a sender's own _tenant_id would otherwise stay whenever meta has none, and a project token of
      // that tenant would be served the row.
      if (k === TENANT_DIM) continue;
      if (dims.length >= maxDims) {
        throw new RecordError('too_many_dimensions', `metric.dimensions: more than ${maxDims} dimensions (MAX_DIMENSIONS)`);
      }
      dimName(k, 'metric.dimensions', lim);
      dims.push([k, dimValue(d[k], `metric.dimensions.${k}`, lim)]);
    }
  }
  const meta = own(obj, 'meta');
  if (isPlainObject(meta)) {
    // The envelope's meta comes from the authenticated API: its region wins over a same-named
    // dimension a sender put into the metric; its tenant is the only one there is (above).
    setMeta(dims, TENANT_DIM, own(meta, 'tenantId'), 'meta.tenantId', lim);
    setMeta(dims, '_region', own(meta, 'region'), 'meta.region', lim);
  }
}

function setMeta(dims: Array<[string, string]>, name: string, v: unknown, where: string, lim: FieldLimits): void {
  if (v === undefined || v === null) return;
  const value = dimValue(v, where, lim);
  for (const d of dims) {
    if (d[0] === name) {
      d[1] = value;
      return;
    }
  }
  // MAX_DIMENSIONS counts the dimensions the series gets, meta's included.
  if (dims.length >= lim.maxDimensions) {
    throw new RecordError(
      'too_many_dimensions',
      `${where}: adding ${name} makes more than ${lim.maxDimensions} dimensions (MAX_DIMENSIONS counts _tenant_id and _region from meta)`,
    );
  }
  dims.push([name, value]);
}
