// Worker entry. Imports only pure code from src/core and src/windows: no pool, no metrics, no I/O.
import { workerData } from 'node:worker_threads';
import { Decoder } from '../src/core/decode.js';
import type { DecodeTask, DecoderSettings, RowsTask, RowsWire, WireResult } from '../src/core/messages.js';
import { RowWorkshop } from '../src/windows/row-task.js';

let decoder: Decoder | undefined;
let rows: RowWorkshop | undefined;

export default function run(task: DecodeTask | RowsTask): WireResult | RowsWire {
  if (task.kind === 'rows') return (rows ??= new RowWorkshop()).format(task);
  decoder ??= new Decoder(workerData as DecoderSettings);
  return decoder.decodeBatchCompact(task.buffer, task.offsets, Date.now(), task.ends);
}
