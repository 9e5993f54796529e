// RepeatLimiter: one line per key per interval, the rest counted and said with the next line.
import { pino } from 'pino';
import t from 'tap';
import { RepeatLimiter } from '../../src/logger.js';

t.test('one line per key per interval; the held-back count comes with the next line', async (t) => {
  let now = 0;
  const lines: Array<Record<string, unknown>> = [];
  const sink = pino({ level: 'info' }, { write: (s: string) => lines.push(JSON.parse(s) as Record<string, unknown>) });
  const l = new RepeatLimiter({ everyMs: 1000, now: () => now });
  const err = new Error('ECONNREFUSED');
  for (let i = 0; i < 50; i++) {
    l.log(sink, 'warn', { err }, 'cannot reach the brokers');
    now += 100;
  }
  // 5 s at 10 lines a second: one line each second.
  t.equal(lines.length, 5, 'one line per second, not 50');
  t.equal(lines[0]!['msg'], 'cannot reach the brokers', 'the first one as it was');
  t.match(lines[0]!['err'], { message: 'ECONNREFUSED', type: 'Error' }, 'with its error object (stack and all)');
  t.equal(lines[1]!['suppressed'], 9, 'the next says how many were held back');
  t.match(lines[1]!['err'], { message: 'ECONNREFUSED' }, 'and still carries the error object');
  t.match(lines[1]!['msg'], /9 more like it held back/);
  l.log(sink, 'warn', {}, 'another message');
  t.equal(lines.length, 6, 'another key is not held back by the first');
});

t.test('the keys remembered are bounded', async (t) => {
  const l = new RepeatLimiter({ everyMs: 60_000, maxKeys: 3, now: () => 0 });
  for (const k of ['a', 'b', 'c', 'd']) t.equal(l.admit(k), 0, `${k}: first time, let through`);
  t.equal(l.admit('d'), null, 'd is remembered');
  t.equal(l.admit('a'), 0, 'a was forgotten (the oldest) when d came: let through again');
});
