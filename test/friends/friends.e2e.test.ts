import { randomUUID } from 'node:crypto';
import type { Task } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { delivery, readStream } from '../http/api/client.ts';
import { connectAgent, settled, startServer, type TestServer, vend } from '../mcp/support.ts';
import { chromiumAvailable, launchChromium } from '../support/chromium.ts';

type Credential = {
  mcp_url: string;
  bearer: string | null;
  mcp_json: unknown;
  redacted?: boolean;
  granted_verbs: string[];
};

const credentialOf = (task: Task): Credential => {
  const part = task.artifacts?.[0]?.parts[0];
  if (part?.kind !== 'data') throw new Error(`no data artifact on task ${task.id}: ${JSON.stringify(task)}`);
  return part.data as Credential;
};

/**
 * The journey of the issue "Friends", each side with its own tool: a remote agent asks over A2A
 * with @a2a-js/sdk's client, the owner approves in Chromium on the Friends screen, the requester
 * reads its credential from the task and connects the MCP SDK's client, sees exactly the granted
 * tools, hands a todo across (the approver's doorbell rings), drains one handed back, then hears
 * `forbidden` after the owner narrows and 401 after the owner revokes.
 */
describe.runIf(chromiumAvailable())('friends end to end: A2A request, approval in the browser, MCP', () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  beforeAll(async () => {
    server = await startServer();
    browser = await launchChromium();
    page = await browser.newPage();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('from friend request to revocation', async () => {
    const owner = server.runtime.config.operator;
    const approver = await vend(server, { operator: owner });

    // Off by default: no Agent Card. The owner turns friend requests on in the screen.
    const cardUrl = `${server.url}/a2a/${approver.slug}/.well-known/agent-card.json`;
    expect((await fetch(cardUrl)).status).toBe(404);
    await page.goto(`${server.url}/friends`);
    await page.locator(`tr[data-endpoint="${approver.slug}"] form[data-form="accept"] button`).click();
    await page.waitForURL(`${server.url}/friends`);
    await expect
      .poll(() => page.locator(`tr[data-endpoint="${approver.slug}"]`).getAttribute('data-accept'))
      .toBe('on');

    // The remote agent asks, with the A2A SDK's own client, from the card.
    const a2a = await new ClientFactory().createFromUrl(cardUrl, '');
    const card = await a2a.getAgentCard();
    expect(card.protocolVersion).toBe('0.3.0');
    expect(card.skills.map((s) => s.name)).toEqual(['friend request']);
    const sent = await a2a.sendMessage({
      message: {
        kind: 'message',
        role: 'user',
        messageId: randomUUID(),
        parts: [
          {
            kind: 'data',
            data: {
              name: 'Build Bot <b>',
              card_url: 'https://bots.example/.well-known/agent-card.json',
              verbs: ['create_for', 'list_todos', 'claim_next', 'complete', 'heartbeat', 'create_webhook'],
              queue: 'handback',
              message: '<img src=x onerror="window.pwned=1"> please',
            },
          },
        ],
      },
    });
    if (sent.kind !== 'task') throw new Error('expected a task');
    expect(sent.status.state).toBe('input-required');
    const taskId = sent.id;
    expect((await a2a.getTask({ id: taskId })).status.state).toBe('input-required');

    // The owner approves in the browser, unticking heartbeat; untrusted text stays inert.
    await settled(server); // the screen reads the read model, which another writer's request reaches on its own time
    await page.goto(`${server.url}/friends`);
    const request = page.locator(`article[data-friend="${taskId}"]`);
    await expect
      .poll(() => request.locator('[data-field="message"]').textContent())
      .toBe('<img src=x onerror="window.pwned=1"> please');
    expect(await request.locator('img').count()).toBe(0);
    expect(await page.evaluate(() => (window as { pwned?: number }).pwned)).toBeUndefined();
    const offered = await request
      .locator('input[type=checkbox]')
      .evaluateAll((els) => els.map((e) => (e as HTMLInputElement).name));
    expect(offered).toEqual([
      'verb_create_for',
      'verb_list_todos',
      'verb_claim_next',
      'verb_complete',
      'verb_heartbeat',
    ]);
    await request.locator('input[name="verb_heartbeat"]').uncheck();
    await request.locator('form[data-form="approve"] button').click();
    await page.waitForURL(`${server.url}/friends`);
    const row = page.locator(`tr[data-friend="${taskId}"]`);
    expect(await row.getAttribute('data-state')).toBe('approved');
    expect(await row.locator('[data-field="granted"]').textContent()).toBe(
      'create_for, list_todos, claim_next, complete',
    );

    // The requester reads its credential from the task, once.
    const done = await a2a.getTask({ id: taskId });
    expect(done.status.state).toBe('completed');
    const cred = credentialOf(done);
    expect(cred.bearer).toMatch(/^hlk_/);
    expect(cred.mcp_json).toMatchObject({ mcpServers: expect.any(Object) });
    const again = credentialOf(await a2a.getTask({ id: taskId }));
    expect(again).toMatchObject({ bearer: null, mcp_json: null, redacted: true, mcp_url: cred.mcp_url });

    // Exactly the granted tools.
    const friend = await connectAgent({ url: cred.mcp_url, token: cred.bearer! });
    const owned = await connectAgent(approver);
    try {
      // Release 0.5.0 everywhere: MCP serverInfo.version and /healthz agree with the package.
      const health = (await (await fetch(`${server.url}/healthz`)).json()) as { version: string };
      expect(health.version).toBe('0.5.0');
      expect(friend.client.getServerVersion()?.version).toBe('0.5.0');
      const tools = (await friend.client.listTools()).tools.map((t) => t.name).sort();
      expect(tools).toEqual(['claim_next', 'complete', 'create_for', 'list_todos']);

      // create_for: a todo on the approver's queue, its doorbell rung, recorded as a friend delivery.
      await owned.client.subscribeResource({ uri: 'hookline://queues/inbox' });
      const handed = await friend.ok<{
        todo: { id: string; queue: string; created: boolean; event_id: number };
      }>('create_for', { title: 'Build the release', payload: { tag: 'v0.5.0' }, key: 'release-1' });
      expect(handed.todo).toMatchObject({ queue: 'inbox', created: true });
      await owned.waitForRing('hookline://queues/inbox');
      const recorded = await delivery(server.runtime.store, handed.todo.event_id);
      expect(recorded?.metadata).toMatchObject({
        provider: `friend:${taskId}`,
        trust_mode: 'token',
        verified: true,
      });
      const again2 = await friend.ok<{ todo: { id: string; created: boolean } }>('create_for', {
        title: 'Build the release',
        key: 'release-1',
      });
      expect(again2.todo).toEqual(expect.objectContaining({ id: handed.todo.id, created: false }));
      await settled(server);
      const inbox = await owned.ok<{ todos: { id: string; untrusted: { title: string } }[] }>(
        'list_todos',
        {},
      );
      expect(inbox.todos.map((t) => t.id)).toContain(handed.todo.id);

      // The approver sees the friendship and hands work back; the friend drains it.
      const friends = await owned.ok<{
        friends: { friend_id: string; queue: string; granted_verbs: string[] }[];
      }>('list_friends');
      expect(friends.friends).toEqual([
        expect.objectContaining({
          friend_id: taskId,
          peer: { untrusted_name: 'Build Bot <b>', slug: new URL(cred.mcp_url).pathname.split('/').at(-1) },
          queue: 'handback',
          granted_verbs: ['create_for', 'list_todos', 'claim_next', 'complete'],
        }),
      ]);
      const back = await owned.ok<{ todo: { id: string; queue: string } }>('create_for', {
        friend_id: taskId,
        title: 'Artifacts are ready',
      });
      expect(back.todo.queue).toBe('handback');
      await settled(server); // claim_next reads the todos read model; the hand-off came from the other side
      const claimed = await friend.ok<{ todo: { id: string } | null; lease_id: string }>('claim_next', {});
      expect(claimed.todo?.id).toBe(back.todo.id);
      await friend.ok('complete', { todo_id: back.todo.id, lease_id: claimed.lease_id });

      // The owner narrows in the browser: claim_next is gone, and calling it is forbidden.
      await page.goto(`${server.url}/friends`);
      await page.locator(`tr[data-friend="${taskId}"] input[name="verb_claim_next"]`).uncheck();
      await page.locator(`tr[data-friend="${taskId}"] form[data-form="narrow"] button`).click();
      await page.waitForURL(`${server.url}/friends`);
      expect(await page.locator(`tr[data-friend="${taskId}"] [data-field="granted"]`).textContent()).toBe(
        'create_for, list_todos, complete',
      );
      expect(await friend.refused('claim_next', {})).toBe('forbidden');

      // The owner revokes: the bearer is refused with 401.
      await page.locator(`tr[data-friend="${taskId}"] form[data-form="revoke"] button`).click();
      await page.waitForURL(`${server.url}/friends`);
      expect(await page.locator(`tr[data-friend="${taskId}"]`).getAttribute('data-state')).toBe('revoked');
    } finally {
      await friend.close().catch(() => {});
      await owned.close().catch(() => {});
    }
    const after = await fetch(cred.mcp_url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${cred.bearer}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });
    expect(after.status).toBe(401);
  });

  /**
   * The forms the journey above does not submit, each in Chromium: the outgoing request form
   * (one of the owner's endpoints asks another), withdraw, decline, and "Show credential once",
   * which shows the credential in its one answer and never again.
   */
  it('asks, withdraws, declines and shows a credential once, each through its form', async () => {
    const owner = server.runtime.config.operator;
    const asker = await vend(server, { operator: owner, queue: 'work' });
    const asked = await vend(server, { operator: owner });
    const outgoing = (id: string) =>
      page.locator(`section[aria-labelledby="outgoing-title"] tr[data-friend="${id}"]`);
    const friendship = (id: string) =>
      page.locator(`section[aria-labelledby="friendships-title"] tr[data-friend="${id}"]`);
    const typesOf = async (id: string) =>
      (await readStream(server.runtime.store, `friend-${id}`)).map((e) => e.type);
    const submitted = async () => {
      await page.waitForURL(`${server.url}/friends`);
      await settled(server);
      await page.goto(`${server.url}/friends`);
    };

    await page.goto(`${server.url}/friends`);
    await page.locator(`tr[data-endpoint="${asked.slug}"] form[data-form="accept"] button`).click();
    await submitted();

    /** Fills and sends the outgoing request form; answers the id of the request it made. */
    const ask = async (message: string): Promise<string> => {
      const ids = () =>
        page
          .locator('section[aria-labelledby="outgoing-title"] tr[data-friend]')
          .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-friend') ?? ''));
      const before = await ids();
      const form = page.locator('form[data-form="request"]');
      await form.locator('select[name="from"]').selectOption(asker.slug);
      await form.locator('input[name="to"]').fill(asked.slug);
      await form.locator('input[name="queue"]').fill('handback');
      for (const v of ['list_todos', 'get_todo', 'claim', 'fail', 'release', 'heartbeat']) {
        await form.locator(`input[name="verb_${v}"]`).uncheck();
      }
      await form.locator('textarea[name="message"]').fill(message);
      await form.locator('button[type="submit"]').click();
      await submitted();
      const added = (await ids()).filter((id) => !before.includes(id));
      expect(added).toHaveLength(1);
      return added[0]!;
    };

    // The outgoing form records a local request with what was filled in.
    const first = await ask('first <i>ask</i>');
    const [requested] = await readStream(server.runtime.store, `friend-${first}`);
    expect(requested?.data).toMatchObject({
      approver_slug: asked.slug,
      requester: { endpoint_id: asker.id, operator: owner },
      requested_verbs: ['create_for', 'claim_next', 'complete'],
      queue: 'handback',
      message: 'first <i>ask</i>',
      via: 'local',
    });
    expect(await outgoing(first).getAttribute('data-state')).toBe('pending');
    expect(await page.locator(`article[data-friend="${first}"] [data-field="message"]`).textContent()).toBe(
      'first <i>ask</i>',
    );

    // Withdraw, from the owner's own requests.
    await outgoing(first).locator('form[data-form="withdraw"] button').click();
    await submitted();
    expect(await typesOf(first)).toEqual(['FriendRequested', 'FriendWithdrawn']);
    expect(await outgoing(first).getAttribute('data-state')).toBe('withdrawn');
    expect(await page.locator(`article[data-friend="${first}"]`).count()).toBe(0);

    // Decline, from the incoming requests.
    const second = await ask('second ask');
    await page.locator(`article[data-friend="${second}"] form[data-form="decline"] button`).click();
    await submitted();
    expect(await typesOf(second)).toEqual(['FriendRequested', 'FriendDeclined']);
    expect(await page.locator(`article[data-friend="${second}"]`).count()).toBe(0);
    expect(await friendship(second).getAttribute('data-state')).toBe('declined');
    expect(await friendship(second).locator('td:has([data-field="state"]) .muted').textContent()).toBe(
      `by ${owner}`,
    );
    expect(await outgoing(second).getAttribute('data-state')).toBe('declined');

    // Approve, then "Show credential once": shown in that one answer, then never again.
    const third = await ask('third ask');
    await page.locator(`article[data-friend="${third}"] form[data-form="approve"] button`).click();
    await submitted();
    expect(await outgoing(third).getAttribute('data-state')).toBe('approved');
    await outgoing(third).locator('form[data-form="credential"] button').click();
    await page.waitForURL(`${server.url}/friends/${third}/credential`);
    const shown = page.locator(`section[data-credential="${third}"]`);
    const token = (await shown.locator('[data-field="token"]').textContent()) ?? '';
    const mcpUrl = (await shown.locator('[data-field="mcp_url"]').textContent()) ?? '';
    expect(token).toMatch(/^hlk_/);
    expect(JSON.parse((await shown.locator('[data-field="mcp_json"]').textContent()) ?? '')).toMatchObject({
      mcpServers: expect.any(Object),
    });
    const friend = await connectAgent({ url: mcpUrl, token });
    try {
      const tools = (await friend.client.listTools()).tools.map((t) => t.name).sort();
      expect(tools).toEqual(['claim_next', 'complete', 'create_for']);
    } finally {
      await friend.close().catch(() => {});
    }

    await page.goto(`${server.url}/friends`);
    expect(await page.locator('section[data-credential]').count()).toBe(0);
    expect(await page.content()).not.toContain(token);
    expect(await outgoing(third).locator('form[data-form="credential"]').count()).toBe(0);
    expect(await outgoing(third).textContent()).toContain('credential handed out');
    // The same form posted again from the page: refused, and the token is not in the answer.
    const again = await page.evaluate(async (url) => {
      const res = await fetch(url, { method: 'POST' });
      return { status: res.status, body: await res.text() };
    }, `${server.url}/friends/${third}/credential`);
    expect(again.status).toBe(409);
    expect(again.body).not.toContain(token);
  });
});
