// The main thread's side of the workers' series dictionaries (see WireResult).
import type { DecodeResult, WireResult } from '../core/messages.js';

export class SeriesDictionaries {
  readonly #dicts = new Map<number, string[]>();

  constructor(private readonly maxDictionaries: number) {}

  /** Registers the batch's new keys and returns the result with its keys spelled out. */
  expand(w: WireResult): DecodeResult {
    let d = this.#dicts.get(w.dict);
    if (d === undefined) {
      d = [];
      this.#dicts.set(w.dict, d);
      // Replaced workers leave dictionaries behind; keep the most recently created ones.
      if (this.#dicts.size > this.maxDictionaries) this.#dicts.delete(this.#dicts.keys().next().value!);
    }
    for (let j = 0; j < w.newKeys.length; j++) d[w.newBase + j] = w.newKeys[j]!;
    const series = new Array<string>(w.seriesIds.length);
    for (let i = 0; i < series.length; i++) {
      const k = d[w.seriesIds[i]!];
      if (k === undefined) throw new Error(`series id ${w.seriesIds[i]} unknown in dictionary ${w.dict}`);
      series[i] = k;
    }
    const { dict: _d, seriesIds: _s, newKeys: _n, newBase: _b, ...rest } = w;
    return { ...rest, series };
  }
}
