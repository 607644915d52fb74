import { randomUUID } from 'node:crypto';
import { ClientFactory } from '@a2a-js/sdk/client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/clock.ts';
import { setFriendRequests } from '../../src/friends/edges.ts';
import { operator, readStream } from '../http/api/client.ts';
import { eventually, settled, startServer, type TestServer, vend } from '../mcp/support.ts';
import { chromiumAvailable, launchChromium } from '../support/chromium.ts';

const DAY = 86_400_000;

type Edge = {
  id: string;
  state: string;
  expires_at: string;
  ended_at: string | null;
  ended_by: string | null;
};

/**
 * A friend request nobody answers ends after 14 days, by the server's clock: the sweep records
 * FriendExpired on its own, and the read model, the Friends screen (Chromium), the operator API
 * and the requester's A2A task (@a2a-js/sdk's client) all say so; approving it then is a 409.
 * The clock starts 15 days back, so that the operator's access token (issued on real time) is
 * still good once it is moved to now.
 */
describe.runIf(chromiumAvailable())('an unanswered friend request expires', () => {
  const clock = fixedClock(new Date(Date.now() - 15 * DAY));
  let server: TestServer;
  let browser: Browser;
  beforeAll(async () => {
    [server, browser] = await Promise.all([
      startServer({ clock, app: { friendExpiry: { intervalMs: 100, initialDelayMs: 100 } } }),
      launchChromium(),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('is recorded by the sweep; API, screen and A2A task agree; approving it is a 409', async () => {
    const owner = server.runtime.config.operator;
    const approver = await vend(server, { operator: owner });
    const { store } = server.runtime;
    await setFriendRequests(
      { store, clock },
      { operator: owner, human: owner, ref: approver.slug, accept: true },
    );
    const api = await operator(server.url, owner);

    const a2a = await new ClientFactory().createFromUrl(
      `${server.url}/a2a/${approver.slug}/.well-known/agent-card.json`,
      '',
    );
    const sent = await a2a.sendMessage({
      message: {
        kind: 'message',
        role: 'user',
        messageId: randomUUID(),
        parts: [{ kind: 'data', data: { name: 'Patient Bot', verbs: ['create_for'], queue: 'handback' } }],
      },
    });
    if (sent.kind !== 'task') throw new Error('expected a task');
    const id = sent.id;
    await settled(server);
    const before = (await api.call<Edge[]>('GET', '/friends')).body.find((e) => e.id === id);
    expect(before).toMatchObject({ state: 'pending', ended_at: null });
    expect(Date.parse(before!.expires_at)).toBe(clock.now().getTime() + 14 * DAY);

    // Fifteen days later, nobody having touched it: the sweep records the expiry.
    clock.set(new Date());
    await eventually(async () =>
      (await readStream(store, `friend-${id}`)).some((e) => e.type === 'FriendExpired') ? true : undefined,
    );
    expect((await readStream(store, `friend-${id}`)).map((e) => e.type)).toEqual([
      'FriendRequested',
      'FriendExpired',
    ]);
    await settled(server);

    // The API reads the recorded expiry from the read model (ended_at), with nobody behind it.
    const after = (await api.call<Edge[]>('GET', '/friends')).body.find((e) => e.id === id);
    expect(after).toMatchObject({ state: 'expired', ended_by: null });
    expect(after?.ended_at).not.toBeNull();

    // Approving it now: 409 naming the expiry, and nothing minted.
    const late = await api.call<{ code: string; detail: string; expires_at: string }>(
      'POST',
      `/friends/${id}/approve`,
      {},
    );
    expect(late.status, late.text).toBe(409);
    expect(late.body).toMatchObject({ code: 'conflict', expires_at: before!.expires_at });
    expect(late.body.detail).toMatch(/expired/);
    expect((await readStream(store, `friend-${id}`)).map((e) => e.type)).toEqual([
      'FriendRequested',
      'FriendExpired',
    ]);

    // The requester's task has failed, and cannot be withdrawn any more.
    const task = await a2a.getTask({ id });
    expect(task.status.state).toBe('failed');
    expect(task.metadata).toMatchObject({ friend_state: 'expired' });
    await expect(a2a.cancelTask({ id })).rejects.toThrow(/cannot be canceled/i);

    // The Friends screen: no longer an incoming request, a friendship row that says expired.
    const page = await browser.newPage();
    try {
      await page.goto(`${server.url}/friends`);
      expect(await page.locator(`article[data-friend="${id}"]`).count()).toBe(0);
      const row = page.locator(`section[aria-labelledby="friendships-title"] tr[data-friend="${id}"]`);
      expect(await row.getAttribute('data-state')).toBe('expired');
      expect(await row.locator('[data-field="state"]').textContent()).toBe('expired');
      expect(await row.locator('form').count()).toBe(0);
    } finally {
      await page.close();
    }
  });
});
