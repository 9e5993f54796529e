// Worker entry. Imports only pure code from src/core: no pool, no metrics, no I/O.
import { workerData } from 'node:worker_threads';
import { Decoder } from '../src/core/decode.js';
import type { DecodeResult, DecodeTask, DecoderSettings } from '../src/core/messages.js';

let decoder: Decoder | undefined;

export default function decode(task: DecodeTask): DecodeResult {
  decoder ??= new Decoder(workerData as DecoderSettings);
  return decoder.decodeBatch(task.buffer, task.offsets, Date.now());
}
