// Worker entry. Imports only pure code from src/core: no pool, no metrics, no I/O.
import { workerData } from 'node:worker_threads';
import { Decoder } from '../src/core/decode.js';
import type { DecodeTask, DecoderSettings, WireResult } from '../src/core/messages.js';

let decoder: Decoder | undefined;

export default function decode(task: DecodeTask): WireResult {
  decoder ??= new Decoder(workerData as DecoderSettings);
  return decoder.decodeBatchCompact(task.buffer, task.offsets, Date.now());
}
