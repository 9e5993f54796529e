// Reads options by their row in the table (options.ts): the default when unset, blanks trimmed, and
// the type check the row declares, with the one-line error that names the option, the value and
// what is allowed. A secret option's value is never quoted in an error (see showValue).
import { ConfigError } from '../errors.js';
import { OPTIONS, specOf, type OptionName, type SpecOf } from './options.js';
import { REDACTED_VALUE, redactUrl } from './redact.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** The value a row's type gives: a number for int and number (or one of `also`), the enum's values. */
export type ValueOf<S> = S extends { type: 'int'; also: readonly (infer A extends string)[] }
  ? number | A
  : S extends { type: 'int' | 'number' }
    ? number
    : S extends { type: 'enum'; values: readonly (infer V extends string)[] }
      ? V
      : string;

/** How a value of `name` may appear in a message: a secret never whole, a URL without credentials. */
export function showValue(name: string, value: string): string {
  const secret = specOf(name).secret;
  if (secret === undefined || secret.kind === 'file' || value === '') return value;
  return secret.kind === 'url' ? redactUrl(value) : REDACTED_VALUE;
}

export function list(s: string): string[] {
  return s.split(',').map((x) => x.trim()).filter((x) => x !== '');
}

export class Reader {
  constructor(private readonly env: Env) {}

  raw(name: OptionName): string {
    const v = this.env[name];
    if (v !== undefined && v !== '') return v.trim();
    return specOf(name).default;
  }

  /** A ConfigError for `name`; the value shown as showValue allows. */
  fail(name: OptionName, value: string, allowed: string): ConfigError {
    return new ConfigError(name, showValue(name, value), allowed);
  }

  /** The value, checked against the row's type. */
  get<N extends OptionName>(name: N): ValueOf<SpecOf<N>> {
    const o = specOf(name);
    const s = this.raw(name);
    switch (o.type) {
      case 'int': {
        if (o.also?.includes(s) === true) return s as ValueOf<SpecOf<N>>;
        const n = Number(s);
        if (!/^-?\d+$/.test(s) || !Number.isSafeInteger(n) || n < o.min || n > o.max) {
          throw this.fail(name, s, `an integer from ${o.min} to ${o.max} is allowed`);
        }
        return n as ValueOf<SpecOf<N>>;
      }
      case 'number': {
        const n = Number(s);
        if (s === '' || !Number.isFinite(n) || n < o.min || n > o.max) throw this.fail(name, s, `a number from ${o.min} to ${o.max} is allowed`);
        return n as ValueOf<SpecOf<N>>;
      }
      case 'enum':
        // An enum whose default is unset (KAFKA_SASL_MECHANISM) may stay unset.
        if (s === '' && o.default === '') return s as ValueOf<SpecOf<N>>;
        return this.oneOf(name, o.values) as ValueOf<SpecOf<N>>;
      default:
        return s as ValueOf<SpecOf<N>>;
    }
  }

  /**
   * Checks every typed row, used or not: a typo in an option the chosen source or sink does not read
   * (KAFKA_SSL_REJECT_UNAUTHORIZED=ture with KAFKA_SSL=false) is still an error, not silence.
   */
  checkAll(): void {
    for (const o of OPTIONS) if ('type' in o) this.get(o.env);
  }

  /** `true` or `false`. */
  bool(name: OptionName): boolean {
    return this.oneOf(name, ['true', 'false'] as const) === 'true';
  }

  /** One of `allowed`. */
  private oneOf<T extends string>(name: OptionName, allowed: readonly T[]): T {
    const s = this.raw(name);
    if (!(allowed as readonly string[]).includes(s)) throw this.fail(name, s, `one of ${allowed.join(', ')} is allowed`);
    return s as T;
  }
}
