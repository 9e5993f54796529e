// The statistics API's admission: `slots` answers at once (a query and the sending of its answer),
// shared fairly between tokens. A token holds at most `perKey` slots, so one token's flood leaves the
// other slots to the other tokens; waiters queue per token (at most `waitingPerKey` each, `maxWaiting`
// in all) and a freed slot goes to the tokens in turn, not to the longest queue. A request beyond its
// token's bound is refused at once (the caller answers 503 + Retry-After): only the flooding token is
// shed, the others keep their turn.

export interface FairGateOptions {
  readonly slots: number;
  readonly perKey: number;
  readonly waitingPerKey: number;
  readonly maxWaiting: number;
}

/** One admitted (or waiting) request. leave() releases its slot, or takes it out of the queue; once. */
export interface Ticket {
  /** Resolves when the slot is granted. */
  readonly ready: Promise<void>;
  leave(): void;
}

interface Waiter {
  readonly grant: () => void;
  granted: boolean;
  left: boolean;
}

interface KeyState {
  held: number;
  readonly waiters: Waiter[];
}

export type Refusal = { readonly refused: 'token' | 'all'; readonly held: number; readonly waiting: number };

export class FairGate {
  readonly #o: FairGateOptions;
  readonly #keys = new Map<unknown, KeyState>();
  /** Keys with waiters, in turn order: the front one is served next (if under its share). */
  readonly #turn: unknown[] = [];
  #held = 0;
  #waiting = 0;

  constructor(o: FairGateOptions) {
    for (const [k, v] of Object.entries(o)) if (!Number.isInteger(v) || v < (k === 'waitingPerKey' ? 0 : 1)) throw new RangeError(`FairGate: ${k} must be an integer >= 1, got ${v}`);
    if (o.perKey > o.slots) throw new RangeError(`FairGate: perKey (${o.perKey}) must be at most slots (${o.slots})`);
    this.#o = o;
  }

  get held(): number {
    return this.#held;
  }

  get waiting(): number {
    return this.#waiting;
  }

  /** Slots and waiters of one key (a token). */
  of(key: unknown): { held: number; waiting: number } {
    const s = this.#keys.get(key);
    return { held: s?.held ?? 0, waiting: s?.waiters.length ?? 0 };
  }

  /** A ticket, or why there is none: the key's own queue is full ('token'), or every queue together ('all'). */
  enter(key: unknown): Ticket | Refusal {
    let s = this.#keys.get(key);
    const held = s?.held ?? 0;
    const queued = s?.waiters.length ?? 0;
    // Free slots with waiters left means every waiter's token is at its share: this one may go first.
    if (queued === 0 && held < this.#o.perKey && this.#held < this.#o.slots) {
      s ??= this.#state(key);
      s.held++;
      this.#held++;
      return this.#ticket(key, { grant: () => {}, granted: true, left: false }, Promise.resolve());
    }
    if (queued >= this.#o.waitingPerKey) return { refused: 'token', held, waiting: queued };
    if (this.#waiting >= this.#o.maxWaiting) return { refused: 'all', held: this.#held, waiting: this.#waiting };
    s ??= this.#state(key);
    let grant!: () => void;
    const ready = new Promise<void>((resolve) => (grant = resolve));
    const w: Waiter = { grant, granted: false, left: false };
    s.waiters.push(w);
    this.#waiting++;
    if (s.waiters.length === 1) this.#turn.push(key);
    this.#wake();
    return this.#ticket(key, w, ready);
  }

  #state(key: unknown): KeyState {
    const s: KeyState = { held: 0, waiters: [] };
    this.#keys.set(key, s);
    return s;
  }

  #ticket(key: unknown, w: Waiter, ready: Promise<void>): Ticket {
    return {
      ready,
      leave: () => {
        if (w.left) return;
        w.left = true;
        const s = this.#keys.get(key)!;
        if (w.granted) {
          s.held--;
          this.#held--;
        } else {
          s.waiters.splice(s.waiters.indexOf(w), 1);
          this.#waiting--;
          if (s.waiters.length === 0) this.#turn.splice(this.#turn.indexOf(key), 1);
        }
        if (s.held === 0 && s.waiters.length === 0) this.#keys.delete(key);
        this.#wake();
      },
    };
  }

  /** Free slots go to the keys with waiters in turn; a key at its share is passed over until it releases one. */
  #wake(): void {
    let passed = 0;
    while (this.#held < this.#o.slots && this.#turn.length > 0 && passed < this.#turn.length) {
      const key = this.#turn.shift()!;
      const s = this.#keys.get(key)!;
      if (s.held >= this.#o.perKey) {
        this.#turn.push(key);
        passed++;
        continue;
      }
      const w = s.waiters.shift()!;
      this.#waiting--;
      w.granted = true;
      s.held++;
      this.#held++;
      if (s.waiters.length > 0) this.#turn.push(key);
      passed = 0;
      w.grant();
    }
  }
}
