// Secrets out of everything we print: logs, the summary, errors. What counts as a secret comes from
// the option table (options marked `secret`) and, inside any URL, its user info and query parameters
// whose names say password, token, secret or key (pg honours ?password= and ?sslpassword=).

/** Replaces a credential inside a URL or a text. */
export const REDACTED = '***';
/** Replaces a secret option's whole value (a password, a key's contents). */
export const REDACTED_VALUE = '[redacted]';

/** Query parameter names whose values are credentials (case-insensitive substrings). */
const SECRET_PARAM = /pass|pwd|token|secret|sslkey|api[-_]?key|credential|auth/i;

/** A URL inside free text: a scheme, "//", then everything up to a blank or a quote. */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi;

function redactQuery(query: string): string {
  return query.replace(/([?&;])([^=&;#]*)=([^&;#]*)/g, (all, sep: string, name: string) => (SECRET_PARAM.test(decodeSafe(name)) ? `${sep}${name}=${REDACTED}` : all));
}

function decodeSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * Where a URL's text (after "scheme://") splits: the user info before `at` (-1: none), the query or
 * fragment from `q` (-1: none). An unencoded "?" or "#" in a password ("u:pa#ss@host") would end the
 * authority before its "@" and leave no user info to redact, so when the authority holds no "@" but
 * the text after it does, the user info runs to the last "@" and the query starts after it. A query
 * value holding an "@" is then redacted as user info too: too much hidden, never a password shown.
 */
function splitUrl(rest: string): { at: number; q: number } {
  const q = rest.search(/[?#]/);
  const at = (q === -1 ? rest : rest.slice(0, q)).lastIndexOf('@');
  if (at !== -1 || q === -1) return { at, q };
  const late = rest.lastIndexOf('@');
  if (late === -1) return { at, q };
  // What follows may be the rest of a query ("?x=a@b&password=…"): its parameters are still judged.
  const after = rest.slice(late + 1).search(/[?#&;]/);
  return { at: late, q: after === -1 ? -1 : late + 1 + after };
}

/**
 * A URL without its credentials: the password of the user info (or a lone user name, often a token)
 * and password-like query parameters become ***. Works on text that does not parse as a URL too (an
 * unencoded "/", "@", "?" or "#" in a password): then everything between "//" and the last "@" goes.
 */
export function redactUrl(url: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url);
  if (scheme === null) return url;
  const rest = url.slice(scheme[0].length);
  const { at, q } = splitUrl(rest);
  const authorityAndPath = q === -1 ? rest : rest.slice(0, q);
  const tail = q === -1 ? '' : redactQuery(rest.slice(q));
  if (at === -1) return `${scheme[0]}${authorityAndPath}${tail}`;
  const userInfo = authorityAndPath.slice(0, at);
  const colon = userInfo.indexOf(':');
  // Keep a plain user name (useful to an operator); anything that might hold a secret goes.
  const user = colon === -1 || /[/@]/.test(userInfo.slice(0, colon)) ? REDACTED : `${userInfo.slice(0, colon)}:${REDACTED}`;
  return `${scheme[0]}${user}@${authorityAndPath.slice(at + 1)}${tail}`;
}

/**
 * The credentials inside a URL, as they may turn up in messages: the password (raw and decoded) and
 * the values of password-like query parameters. A lone user name is hidden inside URLs only: as free
 * text it is too often a plain word ("postgres") to be cut everywhere.
 */
export function urlCredentials(url: string): string[] {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url);
  if (scheme === null) return [];
  const rest = url.slice(scheme[0].length);
  const { at, q } = splitUrl(rest);
  const out: string[] = [];
  if (at !== -1) {
    const userInfo = rest.slice(0, at);
    const colon = userInfo.indexOf(':');
    if (colon !== -1) out.push(userInfo.slice(colon + 1));
  }
  if (q !== -1) {
    for (const m of rest.slice(q).matchAll(/[?&;]([^=&;#]*)=([^&;#]*)/g)) if (SECRET_PARAM.test(decodeSafe(m[1]!))) out.push(m[2]!);
  }
  return [...new Set(out.flatMap((v) => [v, decodeSafe(v)]))].filter((v) => v !== '');
}

/** Free text (an error message, a log line) with every URL in it redacted, and each `secrets` value replaced. */
export function redactSecrets(text: string, secrets: readonly string[] = []): string {
  let out = text.replace(URL_IN_TEXT, (u) => redactUrl(u));
  for (const s of secrets) {
    if (s.length < 3) continue;
    for (const form of new Set([s, encodeURIComponent(s)])) out = out.split(form).join(REDACTED);
  }
  return out;
}
