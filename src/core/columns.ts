// Typed-array columns that grow by copy (a store's per-entry figures, a read's per-entry fields).

type Column = Uint8Array | Int32Array | Float64Array;

/** `a` when it holds n elements, else a copy of it in a new array of that kind of length n (zeros after). */
export function withLength<T extends Column>(a: T, n: number): T {
  if (a.length >= n) return a;
  const b = new (a.constructor as new (length: number) => T)(n);
  b.set(a);
  return b;
}
