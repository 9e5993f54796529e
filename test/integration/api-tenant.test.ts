// Tenant spoofing through the real pipeline, PostgreSQL and statistics API: a Monasca record's tenant
// comes only from the envelope's meta.tenantId, never from a `_tenant_id` its sender put into the
// dimensions, whatever meta is (missing, {}, null, not an object, without tenantId). Each shape comes
// many times, so the decoder's fast path (learnt from the first, slow-path record) decides most of them.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import t from 'tap';
import type { Statistics } from '../../src/api/index.js';
import { parseConfig } from '../../src/config/index.js';
import { Pipeline } from '../../src/pipeline.js';
import { startApi } from '../fixtures/ceilometer/store.js';
import { testSchema } from '../fixtures/pg.js';

const ADMIN = 'admin-0123456789abcdef0123';
const VICTIM = 'victim-tok-0123456789abcdef';
const TOKENS = `${ADMIN} admin\n${VICTIM} project:victim\n`;
const T0 = Date.parse('2020-02-11T12:00:00Z');
const REPEAT = 25;

/** Envelope shapes, each with a sender's `_tenant_id: victim` in the dimensions; `tenant` is what the row must get. */
const SHAPES: Array<{ label: string; meta: string | undefined; tenant: string | null }> = [
  { label: 'no meta', meta: undefined, tenant: null },
  { label: 'meta {}', meta: '{}', tenant: null },
  { label: 'meta null', meta: 'null', tenant: null },
  { label: 'meta a string', meta: '"victim"', tenant: null },
  { label: 'meta a number', meta: '7', tenant: null },
  { label: 'meta an array', meta: '["victim"]', tenant: null },
  { label: 'meta without tenantId', meta: '{"region":"r1"}', tenant: null },
  { label: 'meta tenantId null', meta: '{"tenantId":null}', tenant: null },
  { label: 'meta of another tenant', meta: '{"tenantId":"mallory"}', tenant: 'mallory' },
  { label: 'meta of the victim (the real one)', meta: '{"tenantId":"victim"}', tenant: 'victim' },
];

function lines(): string[] {
  const out: string[] = [];
  for (let i = 0; i < REPEAT; i++) {
    SHAPES.forEach((s, k) => {
      const metric = `{"name":"spoof.cpu","dimensions":{"hostname":"h${k}","_tenant_id":"victim"},"timestamp":${T0 + i * 1000},"value":${i}}`;
      out.push(s.meta === undefined ? `{"metric":${metric}}` : `{"metric":${metric},"meta":${s.meta}}`);
    });
  }
  return out;
}

t.test('a tenant comes only from meta.tenantId: a project token never reads a row its sender labelled with its tenant', async (t) => {
  const { url, pool } = await testSchema(t);
  const dir = mkdtempSync(join(tmpdir(), 'api-tenant-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const input = join(dir, 'in.ndjson');
  writeFileSync(input, `${lines().join('\n')}\n`);
  const config = parseConfig({ SOURCE: `file:${input}`, SINK: url, WINDOW_SECONDS: '3600', METRICS_PORT: '0', WORKER_THREADS: '1', DEAD_LETTER: `file:${join(dir, 'dl.ndjson')}`, PROGRESS: 'off' }, { usable: 2, host: 2, quota: 2, source: 'test' });
  const summary = await new Pipeline(config, { logger: pino({ level: 'silent' }), registry: new Registry() }).run();
  t.equal(summary.ok, SHAPES.length * REPEAT, 'every record stored (none rejected for the spoofed dimension)');

  const api = await startApi(t, pool, TOKENS);
  const byHost = async (token: string): Promise<Map<string, { tenant: string | null; count: number }>> => {
    const res = await api.get('/v2/meters/spoof.cpu/statistics?groupby=hostname&groupby=_tenant_id', token);
    t.equal(res.status, 200);
    return new Map((res.body as Statistics[]).map((s) => [String(s.groupby!['hostname']), { tenant: (s.groupby!['_tenant_id'] as string | null) ?? null, count: s.count }]));
  };
  const admin = await byHost(ADMIN);
  SHAPES.forEach((s, k) => t.same(admin.get(`h${k}`), { tenant: s.tenant, count: REPEAT }, `${s.label}: stored with tenant ${String(s.tenant)}`));

  const victim = await byHost(VICTIM);
  t.same([...victim.keys()], [`h${SHAPES.findIndex((s) => s.tenant === 'victim')}`], 'the victim\'s token reads only the row of its real meta.tenantId');
  const total = await api.get('/v2/meters/spoof.cpu/statistics', VICTIM);
  t.equal((total.body as Statistics[])[0]!.count, REPEAT);
});
