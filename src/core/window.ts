// Tumbling event-time windows aligned to the Unix epoch.

export function windowStart(tsMs: number, windowMs: number): number {
  return Math.floor(tsMs / windowMs) * windowMs;
}

/** A window [start, start + windowMs) is closed once the watermark has reached its end. */
export function isClosed(start: number, windowMs: number, watermarkMs: number): boolean {
  return start + windowMs <= watermarkMs;
}
