// The main thread's side of the workers' series dictionaries (see WireResult).
import type { DecodeResult, WireResult } from '../core/messages.js';

export class SeriesDictionaries {
  /** In order of last use: a live worker's dictionary is used by each of its results, a dead one's never again. */
  readonly #dicts = new Map<number, string[]>();

  /** maxDictionaries: one for each worker, and room for those of replaced workers (dropped least recently used first). */
  constructor(private readonly maxDictionaries: number) {}

  /** Dictionaries held (for tests and the state estimate). */
  get size(): number {
    return this.#dicts.size;
  }

  /** Registers the batch's new keys and returns the result with its keys spelled out. */
  expand(w: WireResult): DecodeResult {
    // The decoder started over from these: no result of it names them again.
    for (const id of w.retired) this.#dicts.delete(id);
    let d = this.#dicts.get(w.dict);
    if (d === undefined) {
      d = [];
      // Replaced workers leave dictionaries behind (they never retire them); keep the recently used ones.
      if (this.#dicts.size >= this.maxDictionaries) this.#dicts.delete(this.#dicts.keys().next().value!);
    } else {
      this.#dicts.delete(w.dict);
    }
    this.#dicts.set(w.dict, d);
    for (let j = 0; j < w.newKeys.length; j++) d[w.newBase + j] = w.newKeys[j]!;
    const series = new Array<string>(w.seriesIds.length);
    for (let i = 0; i < series.length; i++) {
      const k = d[w.seriesIds[i]!];
      if (k === undefined) throw new Error(`series id ${w.seriesIds[i]} unknown in dictionary ${w.dict}`);
      series[i] = k;
    }
    const { dict: _d, seriesIds: _s, newKeys: _n, newBase: _b, retired: _r, ...rest } = w;
    return { ...rest, series };
  }
}
