// The statistics API's admission: shares per token, bounded waiters per token and in all, freed
// slots handed to the waiting tokens in turn, and a waiter that leaves gives its place up.
import t from 'tap';
import { FairGate, type Refusal, type Ticket } from '../../src/api/fair.js';

const ticket = (x: Ticket | Refusal): Ticket => {
  if ('refused' in x) throw new Error(`refused: ${x.refused}`);
  return x;
};
const granted = async (tk: Ticket): Promise<boolean> => {
  let yes = false;
  void tk.ready.then(() => (yes = true));
  await new Promise((r) => setImmediate(r));
  return yes;
};

t.test('a token holds at most its share; another token gets the free slots at once', async (t) => {
  const g = new FairGate({ slots: 4, perKey: 2, waitingPerKey: 2, maxWaiting: 10 });
  const a1 = ticket(g.enter('a'));
  const a2 = ticket(g.enter('a'));
  const a3 = ticket(g.enter('a'));
  t.ok(await granted(a1) && await granted(a2), 'two slots for a');
  t.notOk(await granted(a3), 'a third waits though slots are free: a is at its share');
  const b1 = ticket(g.enter('b'));
  t.ok(await granted(b1), 'b is admitted at once');
  t.same(g.of('a'), { held: 2, waiting: 1 });
  ticket(g.enter('a'));
  t.match(g.enter('a'), { refused: 'token', held: 2, waiting: 2 }, 'a beyond its waiters: refused, for a only');
  t.ok(await granted(ticket(g.enter('b'))), 'b still admitted');
  a1.leave();
  t.ok(await granted(a3), 'a freed slot goes to a\'s next waiter');
  a1.leave();
  t.equal(g.held, 4, 'a second leave() releases nothing');
});

t.test('freed slots go to the waiting tokens in turn, not to the longest queue', async (t) => {
  const g = new FairGate({ slots: 1, perKey: 1, waitingPerKey: 5, maxWaiting: 10 });
  const first = ticket(g.enter('x'));
  const order: string[] = [];
  const wait = (k: string) => {
    const tk = ticket(g.enter(k));
    void tk.ready.then(() => {
      order.push(k);
      setImmediate(() => tk.leave());
    });
  };
  for (let i = 0; i < 3; i++) wait('a');
  wait('b');
  wait('c');
  first.leave();
  await new Promise((r) => setTimeout(r, 50));
  t.same(order, ['a', 'b', 'c', 'a', 'a']);
  t.equal(g.held + g.waiting, 0);
});

t.test('all waiters together are bounded; a waiter that leaves gives its place up', async (t) => {
  const g = new FairGate({ slots: 1, perKey: 1, waitingPerKey: 2, maxWaiting: 2 });
  const held = ticket(g.enter('a'));
  const w1 = ticket(g.enter('b'));
  ticket(g.enter('c'));
  t.match(g.enter('d'), { refused: 'all', held: 1, waiting: 2 });
  w1.leave();
  t.equal(g.waiting, 1, 'left the queue');
  const d = ticket(g.enter('d'));
  held.leave();
  t.notOk(await granted(w1), 'the one that left is never granted');
  t.notOk(await granted(d), 'd waits behind c');
  t.throws(() => new FairGate({ slots: 1, perKey: 2, waitingPerKey: 0, maxWaiting: 1 }), /perKey \(2\) must be at most slots \(1\)/);
});
