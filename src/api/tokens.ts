// The statistics API's tokens, OpenStack style: a request carries X-Auth-Token (or Authorization:
// Bearer) and the token decides what it may read. The token file (API_TOKENS_FILE) is one token a line:
//
//   # comment
//   <token> admin              every project's rows
//   <token> project:<id>       only rows whose _tenant_id dimension is <id>
//
// Tokens are kept only as SHA-256 digests and compared in constant time: every request hashes the
// token it brings and compares the digest with every entry (timingSafeEqual, no early exit), so neither
// the time of an answer nor a log line says anything about a token.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';

export type Scope = { readonly admin: true } | { readonly admin: false; readonly project: string };

/** Tokens shorter than this are refused: a token is a password, guessable ones are not allowed. */
export const MIN_TOKEN_CHARS = 16;
const MAX_TOKEN_CHARS = 4096;
const MAX_PROJECT_CHARS = 255;
const TOKEN_RE = /^[\x21-\x7e]+$/;

export class TokenFileError extends Error {
  constructor(
    readonly file: string,
    readonly line: number | null,
    what: string,
  ) {
    super(`${file}${line === null ? '' : `, line ${line}`}: ${what}`);
    this.name = 'TokenFileError';
  }
}

const digest = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

export class TokenTable {
  readonly #entries: ReadonlyArray<{ readonly digest: Buffer; readonly scope: Scope }>;

  constructor(
    readonly file: string,
    entries: ReadonlyArray<{ digest: Buffer; scope: Scope }>,
  ) {
    this.#entries = entries;
  }

  get size(): number {
    return this.#entries.length;
  }

  /** The scope of a token, or null. Constant time in the token: every entry is compared. */
  scopeOf(token: string): Scope | null {
    const d = digest(token);
    let found: Scope | null = null;
    for (const e of this.#entries) {
      if (timingSafeEqual(e.digest, d) && found === null) found = e.scope;
    }
    return found;
  }

  /** What a start-up log may show: never a token nor a digest. */
  toJSON(): { file: string; tokens: number } {
    return { file: this.file, tokens: this.#entries.length };
  }
}

/** Parses a token file's text; every error names the file and the line, never the token. */
export function parseTokens(text: string, file: string): TokenTable {
  const entries: Array<{ digest: Buffer; scope: Scope }> = [];
  const seen = new Map<string, number>();
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, i) => {
    const n = i + 1;
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const parts = line.split(/\s+/);
    if (parts.length !== 2) {
      throw new TokenFileError(file, n, `${parts.length} fields: "TOKEN admin" or "TOKEN project:ID" (two fields separated by spaces) is allowed`);
    }
    const [token, scopeText] = parts as [string, string];
    if (!TOKEN_RE.test(token)) throw new TokenFileError(file, n, 'the token has characters outside printable ASCII: letters, digits and punctuation are allowed');
    if (token.length < MIN_TOKEN_CHARS || token.length > MAX_TOKEN_CHARS) {
      throw new TokenFileError(file, n, `the token is ${token.length} characters: ${MIN_TOKEN_CHARS} to ${MAX_TOKEN_CHARS} are allowed (e.g. openssl rand -hex 32)`);
    }
    let scope: Scope;
    if (scopeText === 'admin') scope = { admin: true };
    else if (scopeText.startsWith('project:') && scopeText.length > 8) {
      const project = scopeText.slice(8);
      if (project.length > MAX_PROJECT_CHARS) throw new TokenFileError(file, n, `the project id is ${project.length} characters: at most ${MAX_PROJECT_CHARS} are allowed`);
      scope = { admin: false, project };
    } else {
      throw new TokenFileError(file, n, `scope ${JSON.stringify(scopeText.slice(0, 40))} is not valid: admin or project:ID is allowed`);
    }
    const key = digest(token).toString('hex');
    const first = seen.get(key);
    if (first !== undefined) throw new TokenFileError(file, n, `the token of line ${first} is given again: each token once`);
    seen.set(key, n);
    entries.push({ digest: Buffer.from(key, 'hex'), scope });
  });
  if (entries.length === 0) throw new TokenFileError(file, null, 'holds no token: lines "TOKEN admin" or "TOKEN project:ID" are expected');
  return new TokenTable(file, entries);
}

export function loadTokens(file: string): TokenTable {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new TokenFileError(file, null, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  return parseTokens(text, file);
}

/** The token a request brings: X-Auth-Token (what OpenStack clients send), else Authorization: Bearer. */
export function requestToken(headers: IncomingHttpHeaders): string | null {
  const x = headers['x-auth-token'];
  if (typeof x === 'string' && x !== '') return x.trim();
  const a = headers.authorization;
  if (typeof a === 'string') {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(a);
    if (m !== null) return m[1]!;
  }
  return null;
}
