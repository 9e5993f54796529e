import type { FieldLimits, SampleRecord } from '../record.js';
import { extractCeilometer } from './ceilometer.js';
import { extractJson } from './json.js';
import type { FormatSpec } from './spec.js';
import { extractMonasca } from './monasca.js';

export type { FieldRef, FormatSpec, JsonMapping } from './spec.js';

const NO_METADATA: readonly [] = [];

export type Extractor = (obj: Record<string, unknown>, out: SampleRecord) => void;

export function extractorFor(spec: FormatSpec, limits: FieldLimits): Extractor {
  switch (spec.kind) {
    case 'monasca':
      return (obj, out) => extractMonasca(obj, out, limits);
    case 'ceilometer':
      return (obj, out) => extractCeilometer(obj, out, limits, spec.metadata ?? NO_METADATA);
    case 'json':
      return (obj, out) => extractJson(obj, out, spec.mapping, limits);
  }
}
