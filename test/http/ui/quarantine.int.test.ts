import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../../mcp/rules-support.ts';
import { connectAgent, settled, startServer, type TestServer } from '../../mcp/support.ts';
import { operator } from '../api/client.ts';

// The forward-auth user names the operator on the screens, as on the operator API's sign-in.
const USER = 'quarantine-ui-operator';
const PROXY_ENV = {
  HOOKLINE_TRUSTED_PROXIES: '127.0.0.1,::1',
  HOOKLINE_AUTH_USER_HEADER: 'X-Forwarded-User',
  HOOKLINE_SECRET_KEY: randomBytes(32).toString('base64url'),
};

type Vended = {
  mcp_url: string;
  token: string;
  slug: string;
  webhook: { webhook_id: string; ingest_url: string };
};
type Hold = { todo_id: string; event_id: number; released: null | { queue: string; todo_id: string } };

const HOSTILE_TITLE = '<script>alert("title")</script>';
const HOSTILE_MESSAGE = '<img src=x onerror=alert(1)>';

describe('GET /quarantine and POST /quarantine/{todo_id}/release (screens)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: PROXY_ENV });
  }, 120_000);
  afterAll(async () => {
    await server?.close();
  });

  const page = (path: string, init: RequestInit = {}) =>
    fetch(`${server.url}${path}`, {
      redirect: 'manual',
      ...init,
      headers: { 'x-forwarded-user': USER, ...(init.headers as Record<string, string>) },
    });
  const release = (todoId: string, queue: string, headers: Record<string, string>) =>
    page(`/quarantine/${todoId}/release`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams({ queue }).toString(),
    });

  it('shows a faulted delivery with its reason, escaped; releases it same-origin only', async () => {
    const api = await operator(server.url, USER);
    // An unknown filter value is invalid_filter, said in words (issue 15).
    for (const [query, field, detail] of [
      ['state=bogus', 'state', 'state: expected one of held, released or all'],
      ['limit=0', 'limit', 'limit: expected a whole number from 1 to 200'],
    ]) {
      const bad = await api.call<{ code: string; detail: string; field: string }>(
        'GET',
        `/quarantine?${query}`,
      );
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ code: 'invalid_filter', field, detail });
      expect(bad.body.detail).not.toMatch(/[✖→]/);
    }
    const vended = await api.call<Vended>('POST', '/endpoints', {
      name: 'quarantine-ui-agent',
      queue: 'work',
    });
    expect(vended.status).toBe(201);
    const ep = vended.body;
    const agent = await connectAgent({ url: ep.mcp_url, token: ep.token });
    try {
      await agent.ok('set_webhook_rules', {
        webhook_id: ep.webhook.webhook_id,
        rules: [
          {
            id: 'strict',
            source: "(d) => { if (d.payload?.bad) throw new Error(d.payload.msg); return 'continue'; }",
          },
        ],
      });
    } finally {
      await agent.close();
    }
    const ack = (await (
      await post(ep.webhook.ingest_url, { bad: true, type: HOSTILE_TITLE, msg: HOSTILE_MESSAGE })
    ).json()) as {
      id: number;
    };
    await settled(server);
    const held = (await api.call<{ held: Hold[] }>('GET', '/quarantine')).body.held.find(
      (h) => h.event_id === ack.id,
    );
    expect(held).toBeDefined();
    const todoId = held!.todo_id;

    const res = await page('/quarantine');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await res.text();
    expect(html).toContain('href="/quarantine" aria-current="page"');
    const row = html.slice(html.indexOf(`data-held-row="${todoId}"`));
    expect(row).toContain(`href="/log/${ack.id}"`);
    expect(row).toContain('>threw<');
    expect(row).toContain(ep.slug);
    expect(row).toContain(ep.webhook.webhook_id);
    expect(row).toContain('(#0)');
    expect(row).toContain(`action="/quarantine/${todoId}/release"`);
    expect(row).toContain('<option value="work">work</option>');
    expect(html).not.toContain('<option value="quarantine">');
    // Attacker-controlled text is escaped, never markup.
    expect(html).not.toContain(HOSTILE_TITLE);
    expect(html).not.toContain(HOSTILE_MESSAGE);
    expect(html).toContain('&lt;script&gt;alert(&quot;title&quot;)&lt;/script&gt;');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');

    // Another operator's screen does not list it.
    const other = await (
      await fetch(`${server.url}/quarantine`, { headers: { 'x-forwarded-user': 'someone-else' } })
    ).text();
    expect(other).not.toContain(todoId);

    // A cross-site post is refused and changes nothing.
    const cross = await release(todoId, 'work', {
      'sec-fetch-site': 'cross-site',
      origin: 'https://evil.example',
    });
    expect(cross.status).toBe(403);
    expect(
      (await api.call<{ held: Hold[] }>('GET', '/quarantine')).body.held.find((h) => h.todo_id === todoId)
        ?.released,
    ).toBeNull();
    // Never back into quarantine.
    expect((await release(todoId, 'quarantine', { 'sec-fetch-site': 'same-origin' })).status).toBe(400);

    // htmx: the re-rendered row comes back, showing the release.
    const ok = await release(todoId, 'work', { 'sec-fetch-site': 'same-origin', 'hx-request': 'true' });
    expect(ok.status).toBe(200);
    const fragment = await ok.text();
    expect(fragment.trim().startsWith(`<tr id="held-${todoId}"`)).toBe(true);
    expect(fragment).toContain('data-released="true"');
    expect(fragment).toContain('Released to <strong>work</strong>');
    expect(fragment).not.toContain('<html');

    // A plain form post (same queue again: the same release) redirects back to the page.
    const plain = await release(todoId, 'work', { origin: server.url });
    expect(plain.status).toBe(303);
    expect(plain.headers.get('location')).toBe('/quarantine');

    await settled(server);
    const released = await api.call<{ held: Hold[] }>('GET', '/quarantine?state=released');
    const after = released.body.held.find((h) => h.todo_id === todoId);
    expect(after?.released?.queue).toBe('work');
    expect(fragment).toContain(after!.released!.todo_id);
  }, 180_000);
});
