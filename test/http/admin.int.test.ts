import Fastify, { type FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProjectionRunner } from '../../projections/engine/runner.ts';
import type { ProjectionRunner } from '../../projections/engine/types.ts';
import { streamStatsProjection } from '../../projections/stream-stats.projection.ts';
import { jsonEvent } from '../../src/eventstore/codec.ts';
import { adminPlugin, isLoopbackPeer } from '../../src/http/admin.ts';
import { errorsPlugin } from '../../src/http/errors-plugin.ts';
import { type Harness, openHarness, testLogger, trackingProjection } from '../projections/support.ts';

describe('admin routes for the read models', () => {
  let h: Harness;
  let runner: ProjectionRunner;
  let app: FastifyInstance;
  let base: string;

  beforeAll(async () => {
    h = await openHarness();
    for (let i = 0; i < 60; i++) await h.store.append(`admin-${i % 3}`, [jsonEvent('Tested', { i })]);
    runner = createProjectionRunner({
      sql: h.sql,
      store: h.store,
      logger: testLogger,
      projections: [streamStatsProjection, trackingProjection('a', { name: 'second' })],
      options: { batchMs: 20, rebuildBatchSize: 10 },
    });
    await runner.start();
    app = Fastify({ logger: false });
    await app.register(errorsPlugin);
    await app.register(adminPlugin({ projections: runner }));
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await app?.close();
    await runner?.stop();
    await h?.close();
  });

  it('GET /admin/projections answers the status of every projection', async () => {
    await runner.waitFor(await h.store.committedPosition(), { timeoutMs: 20_000 });
    const res = await fetch(`${base}/admin/projections`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      projections: Array<{ name: string; state: string; lagEvents: number }>;
    };
    expect(body.projections.map((p) => p.name)).toEqual(['stream_stats', 'second']);
    expect(body.projections[0]).toMatchObject({ state: 'active', version: 1 });
  });

  it('POST /admin/projections/:name/rebuild streams progress as NDJSON and ends with done', async () => {
    const before = (
      await sql<{ oid: number }>`select 'public.stream_stats'::regclass::oid::int8 as oid`.execute(h.sql.db)
    ).rows[0]!.oid;
    const res = await fetch(`${base}/admin/projections/stream_stats/rebuild`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; name: string; done?: number; total?: number });
    const progress = lines.filter((l) => l.type === 'progress');
    expect(progress.length).toBeGreaterThan(2);
    expect(progress.at(-1)).toMatchObject({ name: 'stream_stats' });
    expect(progress.at(-1)!.done).toBe(progress.at(-1)!.total);
    expect(lines.at(-1)).toMatchObject({ type: 'done', name: 'stream_stats' });
    const after = (
      await sql<{ oid: number }>`select 'public.stream_stats'::regclass::oid::int8 as oid`.execute(h.sql.db)
    ).rows[0]!.oid;
    expect(after).not.toBe(before);
  });

  it('rebuilds all of them in turn', async () => {
    const res = await fetch(`${base}/admin/projections/all/rebuild`, { method: 'POST' });
    const done = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; name: string })
      .filter((l) => l.type === 'done')
      .map((l) => l.name);
    expect(done).toEqual(['stream_stats', 'second']);
  });

  it('answers an unknown projection with a 404 problem document', async () => {
    const res = await fetch(`${base}/admin/projections/nope/rebuild`, { method: 'POST' });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await res.json()).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('refuses callers that are not on the loopback interface, forwarded requests and other hosts and origins', async () => {
    const remote = await app.inject({ method: 'GET', url: '/admin/projections', remoteAddress: '10.1.2.3' });
    expect(remote.statusCode).toBe(403);
    expect(remote.json()).toMatchObject({ code: 'forbidden' });

    const viaProxy = await fetch(`${base}/admin/projections`, {
      headers: { 'x-forwarded-for': '203.0.113.9' },
    });
    expect(viaProxy.status).toBe(403);

    const rebound = await app.inject({
      method: 'GET',
      url: '/admin/projections',
      headers: { host: 'evil.example:8080' },
    });
    expect(rebound.statusCode).toBe(403);

    const crossSite = await fetch(`${base}/admin/projections/second/rebuild`, {
      method: 'POST',
      headers: { origin: 'http://evil.example' },
    });
    expect(crossSite.status).toBe(403);
    expect(await crossSite.json()).toMatchObject({ code: 'cross_site' });
  });

  it('knows a loopback peer when it sees one', () => {
    expect(isLoopbackPeer('127.0.0.1')).toBe(true);
    expect(isLoopbackPeer('127.10.0.2')).toBe(true);
    expect(isLoopbackPeer('::1')).toBe(true);
    expect(isLoopbackPeer('::ffff:127.0.0.1')).toBe(true);
    expect(isLoopbackPeer('10.0.0.1')).toBe(false);
    expect(isLoopbackPeer('::ffff:192.168.1.1')).toBe(false);
    expect(isLoopbackPeer(undefined)).toBe(false);
  });
});
