// CRC32C (Castagnoli), the checksum of a Kafka v2 record batch. A produced batch is checksummed once
// per request over all its bytes, so its speed is per byte of output: kafkajs's byte-at-a-time table
// ran at about 0.1-0.2 GB/s (most of a 4,000-row batch's encoding). @node-rs/crc32 (SSE4.2 / ARMv8
// CRC instructions, prebuilt binaries in npm packages, as lz4-napi) measured 3 GB/s on this loaded
// 2-core machine, and this file's JavaScript fallback (slicing by 16 over 32-bit words) 0.3-0.65
// GB/s, for a platform without a prebuilt binary. Pure: no I/O, usable in a worker.
import { createRequire } from 'node:module';

const POLY = 0x82f63b78;
const TABLES = 16;

/** T[t * 256 + b]: the CRC of byte b followed by t zero bytes (slicing-by-16 tables). */
const T = new Int32Array(TABLES * 256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
  T[n] = c;
}
for (let n = 0; n < 256; n++) {
  for (let t = 1; t < TABLES; t++) {
    const p = T[(t - 1) * 256 + n]!;
    T[t * 256 + n] = (p >>> 8) ^ T[p & 0xff]!;
  }
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** The table-driven CRC32C of b[start, end), in JavaScript (the fallback, and the tests' reference). */
export function crc32cJs(b: Uint8Array, start = 0, end = b.length): number {
  let c = -1;
  let i = start;
  // Bytes one at a time up to a 4-byte boundary, then 16 bytes a step as four aligned 32-bit words
  // (little-endian hosts: Int32Array reads them in the table's byte order).
  while (i < end && ((b.byteOffset + i) & 3) !== 0) c = T[(c ^ b[i++]!) & 0xff]! ^ (c >>> 8);
  if (LITTLE_ENDIAN && end - i >= 16) {
    const w = new Int32Array(b.buffer, b.byteOffset + i, (end - i) >>> 2);
    const nw = w.length & ~3;
    for (let j = 0; j < nw; j += 4) {
      const a = c ^ w[j]!;
      const x = w[j + 1]!;
      const y = w[j + 2]!;
      const z = w[j + 3]!;
      c = T[3840 + (a & 0xff)]! ^ T[3584 + ((a >>> 8) & 0xff)]! ^ T[3328 + ((a >>> 16) & 0xff)]! ^ T[3072 + (a >>> 24)]! ^
        T[2816 + (x & 0xff)]! ^ T[2560 + ((x >>> 8) & 0xff)]! ^ T[2304 + ((x >>> 16) & 0xff)]! ^ T[2048 + (x >>> 24)]! ^
        T[1792 + (y & 0xff)]! ^ T[1536 + ((y >>> 8) & 0xff)]! ^ T[1280 + ((y >>> 16) & 0xff)]! ^ T[1024 + (y >>> 24)]! ^
        T[768 + (z & 0xff)]! ^ T[512 + ((z >>> 8) & 0xff)]! ^ T[256 + ((z >>> 16) & 0xff)]! ^ T[z >>> 24]!;
    }
    i += nw * 4;
  }
  for (; i < end; i++) c = T[(c ^ b[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}

type NativeCrc = (input: Buffer, initial?: number) => number;

function loadNative(): NativeCrc | null {
  try {
    const m = createRequire(import.meta.url)('@node-rs/crc32') as { crc32c?: NativeCrc };
    const f = m.crc32c;
    // Checked against the standard test vector before it is trusted.
    return typeof f === 'function' && f(Buffer.from('123456789')) >>> 0 === 0xe3069283 ? f : null;
  } catch {
    return null;
  }
}

const native = loadNative();

/** Which implementation crc32c() runs: 'native' (@node-rs/crc32) or 'js'. */
export const CRC32C_IMPLEMENTATION: 'native' | 'js' = native === null ? 'js' : 'native';

/** CRC32C of b[start, end), as an unsigned 32-bit number. */
export function crc32c(b: Buffer, start = 0, end = b.length): number {
  if (native === null) return crc32cJs(b, start, end);
  return native(start === 0 && end === b.length ? b : b.subarray(start, end)) >>> 0;
}

// Combining CRCs (zlib's crc32_combine, for CRC32C's polynomial): the CRC of A followed by B from the
// CRC of each and B's length, so the body of a batch can be checksummed where it is written (a lane's
// owner) and its header's 40 bytes here. Polynomials are bit-reflected, x^0 in the top bit.

/** a(x) * b(x) modulo the polynomial. */
function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** X2N[k] = x^(2^k) modulo the polynomial. */
const X2N = new Uint32Array(32);
X2N[0] = 0x40000000;
for (let k = 1; k < 32; k++) X2N[k] = multModP(X2N[k - 1]!, X2N[k - 1]!);

/** x^(n * 2^k) modulo the polynomial. */
function x2nModP(n: number, k: number): number {
  let p = 0x80000000;
  while (n > 0) {
    if (n & 1) p = multModP(X2N[k & 31]!, p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/** The CRC32C of A followed by B, from crcA, crcB and B's length in bytes. */
export function crc32cCombine(crcA: number, crcB: number, lengthB: number): number {
  return (multModP(x2nModP(lengthB, 3), crcA >>> 0) ^ crcB) >>> 0;
}
