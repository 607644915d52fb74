import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listReplayAttempts } from '../../projections/replays.queries.ts';
import { type ClassifyAddress, classifyAddress } from '../../src/replay/ssrf.ts';
import { startServer, type TestServer } from '../auth/server.ts';
import { finished, hookline, start, waitForOutput } from '../cli/cli.ts';
import { vendWithTargets } from '../mcp/rules-support.ts';
import { connectAgent, settled } from '../mcp/support.ts';
import { chromiumAvailable, decideInChromium, launchChromium } from '../support/chromium.ts';
import { codehostSignature } from '../support/senders.ts';
import { type TestServer as HttpsServer, makeCert, startServer as startHttps } from './servers.ts';

/**
 * Replay by hand (README "Replay"): `hookline events replay` (the real binary, signed in through
 * Chromium) against a running server, the detail page's Replay button in Chromium, and the MCP
 * verb, all through the one replay-and-record path. The target is a real HTTPS server on
 * 127.0.0.2, which only this test's runtime counts as public (the classification and the CA are
 * injected here, as in test/replay/replay.int.test.ts); 127.0.0.1 stands for an internal service.
 */
const hasChromium = chromiumAvailable();
const CODEHOST_SECRET = 'replay-by-hand-codehost-secret';
const classify: ClassifyAddress = (ip) => (ip === '127.0.0.2' ? { public: true } : classifyAddress(ip));

describe.runIf(hasChromium)('replay by hand: CLI, detail page, MCP, one record', () => {
  let server: TestServer;
  let browser: Browser;
  let target: HttpsServer;
  let internal: HttpsServer;
  let home: string;
  let env: Record<string, string>;
  let codehostId: number;
  const body = '{"ref":"refs/heads/main",  "spacing":"kept"}';

  beforeAll(async () => {
    const cert = makeCert();
    target = await startHttps('127.0.0.2', cert, (req, res) => {
      if (req.url === '/moved') {
        res.writeHead(302, { location: 'https://127.0.0.1/elsewhere' }).end();
        return;
      }
      res.writeHead(202, { 'content-type': 'text/plain' }).end('accepted');
    });
    internal = await startHttps('127.0.0.1', cert, (_req, res) => res.writeHead(200).end('internal'));
    [server, browser] = await Promise.all([
      startServer({
        env: { HOOKLINE_CODEHOST_SECRET: CODEHOST_SECRET },
        replay: { classify, ca: cert.cert },
      }),
      launchChromium(),
    ]);
    home = await mkdtemp(path.join(tmpdir(), 'hookline-replay-'));
    env = { HOME: home, XDG_CONFIG_HOME: path.join(home, 'config'), HOOKLINE_URL: server.url };
    const child = start(['login', '--no-open'], env);
    const done = finished(child);
    const [url] = await waitForOutput(child, 'stderr', /http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+/);
    await decideInChromium(browser, url!, 'Allow');
    expect((await done).code).toBe(0);

    const res = await fetch(`${server.url}/webhooks/codehost`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'x-codehost-event': 'push',
        'x-codehost-delivery': 'dlv-replay-by-hand',
        'x-hub-signature-256': await codehostSignature(CODEHOST_SECRET, body),
      },
      body,
    });
    expect(res.status).toBe(202);
    codehostId = ((await res.json()) as { id: number }).id;
    await settled(server);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await target?.close();
    await internal?.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  const errorOf = (run: { stderr: string }) =>
    (JSON.parse(run.stderr.trim()) as { error: { code: string; message: string } }).error;

  it('hookline events replay sends the stored bytes to an https target and reports the attempt', async () => {
    const run = await hookline(
      ['events', 'replay', String(codehostId), '--to', `${target.origin()}/hook`, '--json'],
      env,
    );
    expect(run.code, run.stderr).toBe(0);
    const attempt = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(attempt).toMatchObject({
      event_id: codehostId,
      attempt: 0,
      target: `${target.origin()}/hook`,
      outcome: 'delivered',
      status: 202,
      location: null,
      via: 'api',
      by: 'admin',
      response_snippet: 'accepted',
    });
    expect(attempt.latency_ms).toEqual(expect.any(Number));
    const seen = target.seen.at(-1)!;
    expect(seen.url).toBe('/hook');
    expect(seen.body.equals(Buffer.from(body))).toBe(true);
    expect(seen.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(seen.headers['x-hookline-event-id']).toBe(String(codehostId));

    const human = await hookline(
      ['events', 'replay', String(codehostId), '--to', `${target.origin()}/moved`],
      env,
    );
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(
      new RegExp(
        `^Replayed #${codehostId} to ${target.origin()}/moved: HTTP 302 \\(redirect to https://127\\.0\\.0\\.1/elsewhere, not followed\\) in \\d+ ms`,
      ),
    );
  });

  it('refuses http, internal addresses and unknown ids with the named problems, and records the refusals', async () => {
    const before = internal.seen.length + target.seen.length;
    const loopback = await hookline(
      ['events', 'replay', String(codehostId), '--to', `https://127.0.0.1:${internal.port}/admin`, '--json'],
      env,
    );
    expect(loopback.code).toBe(1);
    expect(errorOf(loopback)).toMatchObject({ code: 'replay_refused' });
    expect(errorOf(loopback).message).toMatch(/call time: address/);
    const plain = await hookline(
      ['events', 'replay', String(codehostId), '--to', `http://127.0.0.2:${target.port}/`, '--json'],
      env,
    );
    expect(plain.code).toBe(1);
    expect(errorOf(plain)).toMatchObject({ code: 'replay_refused' });
    expect(errorOf(plain).message).toMatch(/scheme/);
    expect(internal.seen.length + target.seen.length).toBe(before);

    const missing = await hookline(
      ['events', 'replay', '999999999', '--to', `${target.origin()}/`, '--json'],
      env,
    );
    expect(missing.code).toBe(1);
    expect(errorOf(missing)).toMatchObject({ code: 'not_found' });
    const noTarget = await hookline(['events', 'replay', String(codehostId)], env);
    expect(noTarget.code).not.toBe(0);
    expect(noTarget.stderr).toMatch(/--to/);

    // A public target that does not answer: replay_failed, recorded as failed.
    const closed = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.2', () => {
        const { port } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const down = await hookline(
      ['events', 'replay', String(codehostId), '--to', `https://127.0.0.2:${closed}/`, '--json'],
      env,
    );
    expect(down.code).toBe(1);
    expect(errorOf(down)).toMatchObject({ code: 'replay_failed' });

    await settled(server);
    const attempts = await listReplayAttempts(server.runtime.db, codehostId);
    expect(attempts.slice(0, 3).map((a) => [a.outcome, a.reason, a.phase, a.via, a.by])).toEqual([
      ['failed', 'network', null, 'api', 'admin'],
      ['refused', 'scheme', 'call', 'api', 'admin'],
      ['refused', 'address', 'call', 'api', 'admin'],
    ]);
  });

  it('an operator replays only deliveries they may read: another operator’s webhook is not found', async () => {
    const theirs = await vendWithTargets(server, [], 'alice');
    const res = await fetch(theirs.ingestUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"private":true}',
    });
    const { id } = (await res.json()) as { id: number };
    await settled(server);
    const run = await hookline(
      ['events', 'replay', String(id), '--to', `${target.origin()}/`, '--json'],
      env,
    );
    expect(run.code).toBe(1);
    expect(errorOf(run)).toMatchObject({ code: 'not_found' });
    expect(await listReplayAttempts(server.runtime.db, id)).toEqual([]);
  });

  it('replay_webhook_event records its attempts on the same stream, shown beside the others', async () => {
    const ep = await vendWithTargets(server, [`${target.origin()}/from-agent`], 'admin');
    const res = await fetch(ep.ingestUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"for":"the agent"}',
    });
    const { id } = (await res.json()) as { id: number };
    await settled(server);
    const agent = await connectAgent(ep);
    try {
      expect(await agent.ok('replay_webhook_event', { event_id: id })).toMatchObject({ status: 202 });
      expect(
        await agent.refused('replay_webhook_event', {
          event_id: id,
          target_url: `https://127.0.0.1:${internal.port}/`,
        }),
      ).toBe('replay_refused');
    } finally {
      await agent.close();
    }
    // The operator replays the same delivery by hand: one stream, three attempts.
    const run = await hookline(['events', 'replay', String(id), '--to', `${target.origin()}/by-hand`], env);
    expect(run.code, run.stderr).toBe(0);
    await settled(server);
    const attempts = await listReplayAttempts(server.runtime.db, id);
    expect(attempts.map((a) => [a.attempt, a.outcome, a.via, a.by])).toEqual([
      [2, 'delivered', 'api', 'admin'],
      [1, 'refused', 'mcp', ep.slug],
      [0, 'delivered', 'mcp', ep.slug],
    ]);
    expect(attempts[2]).toMatchObject({ target: `${target.origin()}/from-agent`, status: 202 });
  });

  it('the detail page replays in Chromium and lists every attempt, refused ones too', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(`${server.url}/log/${codehostId}`);
      const panel = page.locator('[data-replay-panel]');
      const rowsBefore = await panel.locator('tr[data-attempt]').count();
      expect(rowsBefore).toBeGreaterThanOrEqual(5); // the CLI's, from the tests above

      await panel.getByLabel('Target URL').fill(`${target.origin()}/from-the-page`);
      await panel.getByRole('button', { name: 'Replay' }).click();
      const delivered = page.locator('[data-replay-result="delivered"]');
      await delivered.waitFor({ timeout: 15_000 });
      expect(await delivered.textContent()).toMatch(
        /Delivered to https:\/\/127\.0\.0\.2:\d+\/from-the-page: HTTP 202/,
      );
      expect(target.seen.at(-1)!.url).toBe('/from-the-page');
      const newest = page.locator('[data-replay-panel] tr[data-attempt]').first();
      expect(await newest.getAttribute('data-outcome')).toBe('delivered');
      expect(await newest.locator('[data-field="by"]').textContent()).toMatch(/admin\s+\(ui\)/);
      expect(await page.locator('[data-replay-panel] tr[data-attempt]').count()).toBe(rowsBefore + 1);

      // A refused target: shown to the human, recorded as a refused attempt, nothing sent.
      const sent = internal.seen.length;
      await page.getByLabel('Target URL').fill(`https://127.0.0.1:${internal.port}/metadata`);
      await page.getByRole('button', { name: 'Replay' }).click();
      const refused = page.locator('[data-replay-result="refused"]');
      await refused.waitFor({ timeout: 15_000 });
      expect(await refused.textContent()).toMatch(/Refused: address \(call time\)/);
      expect(internal.seen.length).toBe(sent);

      // After a reload the attempts come from the read model alone.
      await page.reload();
      const rows = page.locator('[data-replay-panel] tr[data-attempt]');
      expect(await rows.count()).toBe(rowsBefore + 2);
      expect(await rows.first().getAttribute('data-outcome')).toBe('refused');
      expect(await rows.nth(1).locator('[data-field="target"]').textContent()).toBe(
        `${target.origin()}/from-the-page`,
      );
      // At phone width the attempts stack as cards: nothing to scroll sideways.
      await page.setViewportSize({ width: 390, height: 844 });
      const overflow = await page
        .locator('[data-replay-panel] .table-wrap')
        .evaluate((el) => el.scrollWidth - el.clientWidth);
      expect(overflow).toBeLessThanOrEqual(0);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('the Replay form refuses a cross-site post and a missing target, and sends nothing', async () => {
    const sent = target.seen.length;
    const before = (await listReplayAttempts(server.runtime.db, codehostId)).length;
    const form = (fields: Record<string, string>, headers: Record<string, string>) =>
      fetch(`${server.url}/log/${codehostId}/replay`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(fields).toString(),
      });
    const crossSite = await form(
      { target_url: `${target.origin()}/csrf` },
      { 'sec-fetch-site': 'cross-site' },
    );
    expect(crossSite.status).toBe(403);
    expect(((await crossSite.json()) as { code: string }).code).toBe('cross_site');
    const empty = await form({ target_url: ' ' }, { 'sec-fetch-site': 'same-origin' });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ code: 'invalid_body', field: 'target_url' });
    expect(target.seen.length).toBe(sent);
    await settled(server);
    expect(await listReplayAttempts(server.runtime.db, codehostId)).toHaveLength(before);
  });

  it('a rebuild of the replays read model gives the same attempts', async () => {
    await settled(server);
    const before = await listReplayAttempts(server.runtime.db, codehostId);
    expect(before.length).toBeGreaterThanOrEqual(7);
    // Emptied by hand, the table is given back by the rebuild from the replay streams alone.
    await server.runtime.db.deleteFrom('replay_attempts').execute();
    expect(await listReplayAttempts(server.runtime.db, codehostId)).toEqual([]);
    await server.runtime.projections.rebuild('replays');
    expect(await listReplayAttempts(server.runtime.db, codehostId)).toEqual(before);
  });
});
