import type { FieldLimits, SampleRecord } from '../record.js';
import { extractCeilometer } from './ceilometer.js';
import { extractJson, type JsonMapping } from './json.js';
import { extractMonasca } from './monasca.js';

export type { FieldRef, JsonMapping } from './json.js';

export type FormatSpec =
  | { readonly kind: 'monasca' }
  | { readonly kind: 'ceilometer' }
  | { readonly kind: 'json'; readonly mapping: JsonMapping };

export const FORMAT_NAMES = ['monasca', 'ceilometer', 'json'] as const;

export type Extractor = (obj: Record<string, unknown>, out: SampleRecord) => void;

export function extractorFor(spec: FormatSpec, limits: FieldLimits): Extractor {
  switch (spec.kind) {
    case 'monasca':
      return (obj, out) => extractMonasca(obj, out, limits);
    case 'ceilometer':
      return (obj, out) => extractCeilometer(obj, out, limits);
    case 'json':
      return (obj, out) => extractJson(obj, out, spec.mapping, limits);
  }
}
