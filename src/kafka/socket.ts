// kafkajs's socket factory (its `socketFactory` option) for plaintext connections: each response is
// read into a buffer of its own and handed to kafkajs whole (./framing.ts), one longer than a read
// into shared memory from a pool (./frame-pool.ts). TLS connections keep
// kafkajs's own factory: a TLS socket takes no `onread`.
import net from 'node:net';
import type { ISocketFactory } from 'kafkajs';
import { sharedFrame } from './frame-pool.js';
import { OWN_BUFFER_MAX_BYTES, ResponseFramer } from './framing.js';
import { kafkajsInternals } from './internals.js';

/** kafkajs's keep-alive for its connections (network/socketFactory.js). */
const KEEP_ALIVE_MS = 60_000;

export const framedSocketFactory: ISocketFactory = ({ host, port, ssl, onConnect }) => {
  if (ssl) throw new Error('framedSocketFactory: TLS connections use kafkajs\'s own factory');
  let socket: net.Socket | null = null;
  // kafkajs listens for 'data' (network/socket.js); with `onread` the socket emits none itself. A
  // response read in place goes into shared memory: the Kafka source's batches are views of it.
  const framer = new ResponseFramer((frame) => socket!.emit('data', frame), OWN_BUFFER_MAX_BYTES, sharedFrame);
  socket = net.connect({
    host,
    port,
    onread: {
      buffer: () => framer.target(),
      callback: (n: number) => {
        framer.read(n);
        return true;
      },
    },
  }, onConnect);
  socket.setKeepAlive(true, KEEP_ALIVE_MS);
  return socket;
};

const PATCHED = Symbol.for('streamstats.wholeResponsesPatched');

interface ConnectionProto {
  chunks: Buffer[];
  bytesBuffered: number;
  processData(this: ConnectionProto, raw: Buffer): unknown;
  [PATCHED]?: true;
}

/**
 * kafkajs keeps what follows a response as the next one's first chunk (an empty Buffer when nothing
 * follows) and joins the chunks with Buffer.concat whenever there are two: a whole response after an
 * empty remainder, the one framedSocketFactory hands over, was copied once more for nothing. The
 * empty remainder is dropped first, so the response is decoded where it was read. Installed on
 * kafkajs 2.2.4 (idempotent); false for another release or layout (left as it is).
 */
export function patchWholeResponses(): boolean {
  const proto = kafkajsInternals((r) => (r('kafkajs/src/network/connection.js') as { prototype: ConnectionProto }).prototype);
  if (proto === null) return false;
  if (proto[PATCHED] === true) return true;
  const original = proto.processData;
  if (typeof original !== 'function') return false;
  proto.processData = function processData(this: ConnectionProto, raw: Buffer): unknown {
    if (this.bytesBuffered === 0 && this.chunks.length === 1) this.chunks.length = 0;
    return original.call(this, raw);
  };
  proto[PATCHED] = true;
  return true;
}
