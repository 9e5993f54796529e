// Rate-limited repeated warnings/errors, against a real pino logger writing into an array.
import t from 'tap';
import pino from 'pino';
import { RepeatLimiter, limitRepeats } from '../../src/sources/kafka/repeat-log.js';

function capture(level = 'info') {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
  return { logger, lines };
}

t.test('one line per interval per message, the next one carrying how many were left out; the interval doubles while it repeats', async (t) => {
  let now = 0;
  const { logger, lines } = capture();
  const log = limitRepeats(logger, 10_000, () => now);
  for (let i = 0; i < 320; i++) {
    now = i * 571; // about 320 lines in 3 minutes, as kafkajs writes them during an outage
    log.error({ broker: 'b1', attempt: i }, 'kafka: Connection error: connect ECONNREFUSED');
  }
  const written = lines.map((l) => l['attempt'] as number);
  t.equal(written[0], 0, 'the first line is written at once');
  t.equal(lines[0]!['repeated'], undefined);
  for (let k = 1; k < written.length; k++) {
    const interval = 10_000 * 2 ** (k - 1);
    t.ok((written[k]! - written[k - 1]!) * 571 >= interval, `line ${written[k]} is at least ${interval} ms after the last written`);
    t.ok((written[k]! - 1 - written[k - 1]!) * 571 < interval, `line ${written[k]} is the first one after it`);
    t.equal(lines[k]!['repeated'], written[k]! - written[k - 1]! - 1, 'it counts the lines left out in between');
  }
  t.equal(lines.length, 5, `${lines.length} lines written for 320 in 3 minutes (at 0, 10, 30, 70, 150 s)`);
  t.ok(lines.every((l) => l['msg'] === 'kafka: Connection error: connect ECONNREFUSED' && l['level'] === 50));
  // Quiet for longer than its interval, then again: from the first interval.
  now += 400_000;
  log.error('kafka: Connection error: connect ECONNREFUSED');
  now += 10_000;
  log.error('kafka: Connection error: connect ECONNREFUSED');
  t.equal(lines.length, 7, 'a new outage starts from the first interval');
});

t.test('different messages and levels are limited apart; info passes; error objects keep their stack', async (t) => {
  const { logger, lines } = capture();
  const log = limitRepeats(logger, 60_000, () => 0);
  log.warn('kafka: reconnecting after back-off');
  log.warn({ attempt: 2 }, 'kafka: reconnecting after back-off');
  log.error('kafka: reconnecting after back-off');
  log.warn({ err: new Error('x') }, 'kafka: commit failed');
  log.info('kafka: joined the group');
  log.info('kafka: joined the group');
  t.same(lines.map((l) => [l['level'], l['msg']]), [
    [40, 'kafka: reconnecting after back-off'],
    [50, 'kafka: reconnecting after back-off'],
    [40, 'kafka: commit failed'],
    [30, 'kafka: joined the group'],
    [30, 'kafka: joined the group'],
  ]);
  t.match((lines[2]!['err'] as { stack: string }).stack, /Error: x/);
  let now = 0;
  const c = capture();
  const l2 = limitRepeats(c.logger, 1000, () => now);
  l2.error(new Error('boom'), 'kafka: crash');
  l2.error(new Error('boom'), 'kafka: crash');
  now = 1000;
  l2.error(new Error('boom'), 'kafka: crash');
  t.equal(c.lines.length, 2);
  t.equal(c.lines[1]!['repeated'], 1);
  t.match((c.lines[1]!['err'] as { message: string }).message, 'boom', 'an Error passed first stays the err field');
});

t.test('messages that differ only in their numbers are one kind (kafkajs puts delays and ports in them)', async (t) => {
  let now = 0;
  const { logger, lines } = capture();
  const log = limitRepeats(logger, 10_000, () => now);
  for (const ms of [3516, 2200, 4101]) {
    log.error({ retryCount: 1 }, `kafka: Restarting the consumer in ${ms}ms`);
    now += 1000;
  }
  log.error('kafka: Connection error: connect ECONNREFUSED 127.0.0.1:39123');
  now = 10_000;
  log.error({ retryCount: 4 }, 'kafka: Restarting the consumer in 980ms');
  t.same(lines.map((l) => [l['msg'], l['repeated']]), [
    ['kafka: Restarting the consumer in 3516ms', undefined],
    ['kafka: Connection error: connect ECONNREFUSED 127.0.0.1:39123', undefined],
    ['kafka: Restarting the consumer in 980ms', 2],
  ], 'the line written is the real one, with its own numbers');
});

t.test('below the level nothing is counted; the limiter forgets the oldest of many messages', async (t) => {
  const { logger, lines } = capture('error');
  const log = limitRepeats(logger, 60_000, () => 0);
  log.warn('hidden');
  log.error('shown');
  t.same(lines.map((l) => l['msg']), ['shown']);
  const r = new RepeatLimiter(60_000, () => 0);
  t.equal(r.admit('first'), 0);
  t.equal(r.admit('first'), null);
  for (let i = 0; i < 1000; i++) r.admit(`m${i}`);
  t.equal(r.admit('first'), 0, 'forgotten after 1000 newer messages: written again (bounded memory)');
  t.throws(() => new RepeatLimiter(-1), /intervalMs must be >= 0, got -1/);
});
