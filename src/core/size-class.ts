// Sizes of reusable buffers: a request rounded up to a class, so that slowly creeping requests (a
// batch's size plus an eighth, a fetch response a little larger than the last) fit buffers given back.

/** bytes rounded up to a multiple of an eighth of the power of two at or below it (at most 1/8 more, from 4 KiB). */
export function sizeClass(bytes: number): number {
  if (bytes <= 4096) return 4096;
  const step = 2 ** Math.floor(Math.log2(bytes)) / 8;
  return Math.ceil(bytes / step) * step;
}
