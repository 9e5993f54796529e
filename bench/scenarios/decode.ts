// Scenario 1: how to turn message bytes into objects. JSON.parse per message (src/core/decode.ts)
// against one JSON.parse over the batch joined as an array, and stream-json's streaming parser, on the
// seed-000 Monasca message shape. The full decoder (parse + extract + pre-aggregate) is the reference
// for what share of a worker's time parsing is.
import { runChild } from '../lib/child.js';
import { alternate, ratio, variantTable, type Variant } from '../lib/measure.js';
import { fmt } from '../lib/stats.js';
import { variant, type Scenario } from '../lib/scenario.js';
import type { DecodeChildResult, DecodeVariant } from '../child/decode.js';

const LABELS: Record<DecodeVariant, string> = {
  'per-message': 'JSON.parse per message (current)',
  'batch-array': 'JSON.parse of the batch as `[m0,m1,...]`',
  'stream-json': 'stream-json Parser + StreamValues',
  'full-decoder': 'reference: full Decoder.decodeBatch (parse + extract + aggregate)',
};

export const decodeScenario: Scenario = {
  id: 'decode',
  order: 1,
  title: 'Scenario 1: JSON decode strategies',
  async run(ctx) {
    const count = ctx.mode === 'full' ? 690_000 : 100_000;
    const batchSize = 1000;
    let bytes = 0;
    const variants: Variant[] = (Object.keys(LABELS) as DecodeVariant[]).map((v) => ({
      id: v,
      label: LABELS[v],
      config: { variant: v, messages: count, batchSize },
      run: async () => {
        const r = await runChild<DecodeChildResult>('decode', [v, String(count), String(batchSize)]);
        bytes = r.bytes;
        return { recordsPerSecond: r.recordsPerSecond, elapsedSeconds: r.seconds, peakRssBytes: r.maxRssBytes, extra: { megabytesPerSecond: r.bytes / r.seconds / 1e6 } };
      },
    }));
    const results = await alternate('decode', variants, ctx.protocol, ctx.log);
    const group = { id: 'decode', title: 'decode strategies', variants: results, baseline: 'per-message' };
    const base = variant(group, 'per-message');
    const parsers = results.filter((r) => r.id !== 'full-decoder');
    const fastest = parsers.reduce((a, b) => (b.recordsPerSecond.median > a.recordsPerSecond.median ? b : a));
    const full = variant(group, 'full-decoder');
    const parseShare = full.recordsPerSecond.median / base.recordsPerSecond.median;
    const arr = variant(group, 'batch-array');
    const sj = variant(group, 'stream-json');
    const verdict = fastest.id === 'per-message'
      ? `**Kept: JSON.parse per message.** It was the fastest here (${fmt.ratio(ratio(arr, base))} for the joined array, ${fmt.ratio(ratio(sj, base))} for stream-json, as ratios of medians to it). ` +
        'Joining a batch into one array costs an extra copy of every byte to insert the commas and one large string, and gains nothing because V8\'s JSON.parse is already a tight native loop per call; ' +
        'it would also turn one malformed message into a failed batch that must be re-parsed message by message to find the culprit. ' +
        'stream-json tokenises in JavaScript and emits an event per token: it exists to bound memory on huge documents, which our messages (about ' +
        `${fmt.int(bytes / count)} bytes each) are not.`
      : `**Fastest here: ${fastest.label}** (${fmt.ratio(ratio(fastest, base))} of JSON.parse per message). ` +
        'The engine keeps JSON.parse per message anyway unless the gain is large: parsing a joined batch turns one malformed message into a failed batch ' +
        'that must be re-parsed message by message to find the culprit, and needs one extra copy of every byte. ' +
        'stream-json tokenises in JavaScript and emits an event per token; it exists to bound memory on huge documents, which our messages are not.';
    const markdown = [
      `## ${this.title}`,
      '',
      `${fmt.int(count)} seed-000 Monasca messages (about ${fmt.int(bytes / count)} bytes each, ${fmt.int(bytes / 1e6)} MB in all), packed ${batchSize} to a batch as the engine packs them; ` +
        'one child process per run, the timed part is the decode loop only (building the input is not timed). Ratios are of medians against JSON.parse per message.',
      '',
      variantTable(results, base, 'strategy'),
      '',
      `Throughput in MB/s (median): ${results.map((r) => `${r.id} ${fmt.int(r.extra.megabytesPerSecond?.median ?? NaN)}`).join(', ')}.`,
      '',
      verdict,
      '',
      `Parsing is not the whole of decoding: the full decoder (parse, Monasca extraction, series key, Welford pre-aggregation) runs at ${fmt.ratio(parseShare)} of the parse-only rate, ` +
        `so JSON.parse is about ${fmt.int(parseShare * 100)} % of a worker's time on this shape and the rest is extraction and aggregation.`,
      '',
    ].join('\n');
    return {
      config: { messages: count, batchSize, shape: 'seed 000 Monasca (src/sources/generator.ts)' },
      groups: [group],
      markdown,
      headline: [
        `decode: JSON.parse per message ${fmt.int(base.recordsPerSecond.median)} msg/s; batch array ${fmt.ratio(ratio(arr, base))}; stream-json ${fmt.ratio(ratio(sj, base))}; full decoder ${fmt.int(full.recordsPerSecond.median)} rec/s`,
      ],
    };
  },
};
