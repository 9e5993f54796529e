// What the configuration says about the input format: plain data, sent to every worker inside the
// decoder settings. It imports nothing, so the cross-thread types can name it without pulling in the
// extractors (which need the record helpers, which need the cross-thread types).

/** A field read from a path ("verb.id", "items.0.price") or a constant. */
export type FieldRef = { readonly path: readonly string[]; readonly text: string } | { readonly constant: string | number };

export interface JsonMapping {
  readonly name: FieldRef;
  readonly value: FieldRef;
  readonly timestamp: { readonly path: readonly string[]; readonly text: string };
  readonly unit: FieldRef | null;
  readonly dimensions: ReadonlyArray<{ readonly name: string; readonly path: readonly string[]; readonly text: string }>;
}

export type FormatSpec =
  | { readonly kind: 'monasca' }
  /** metadata: resource_metadata keys (CEILOMETER_METADATA) kept as the dimensions resource_metadata.KEY. */
  | { readonly kind: 'ceilometer'; readonly metadata?: ReadonlyArray<{ readonly name: string; readonly path: readonly string[] }> }
  | { readonly kind: 'json'; readonly mapping: JsonMapping };
