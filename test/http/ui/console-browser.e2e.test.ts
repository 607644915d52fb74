import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../../mcp/rules-support.ts';
import {
  type Agent,
  connectAgent,
  push,
  settled,
  startServer,
  type TestServer,
  type VendedEndpoint,
  vend,
} from '../../mcp/support.ts';
import { chromiumAvailable, launchChromium } from '../../support/chromium.ts';

/**
 * The console screens (agents, todos, webhooks) in Chromium, at desktop and phone width: the
 * human's own things only, untrusted text inert, todo moves arriving live over the stream.
 * The screens act for HOOKLINE_OPERATOR (admin) on loopback, without a forward-auth proxy.
 */
const hasChromium = chromiumAvailable();
const XSS = '<img src=x onerror="document.title=\'pwned\'">';

describe.runIf(hasChromium)('the console screens in Chromium', () => {
  let server: TestServer;
  let browser: Browser;
  let mine: VendedEndpoint;
  let theirs: VendedEndpoint;
  let agent: Agent;
  let todoId: string;
  let leaseId: string;

  beforeAll(async () => {
    [server, browser] = await Promise.all([startServer(), launchChromium()]);
    mine = await vend(server, { operator: 'admin', queue: 'work' });
    theirs = await vend(server, { operator: 'mallory', queue: 'secret' });
    agent = await connectAgent({ url: mine.url, token: mine.token });
    const pushed = await push(
      server,
      mine,
      { title: `fix ${XSS}`, payload: { note: '<script>document.title="pwned"</script>' } },
      'admin',
    );
    todoId = pushed.id;
    await push(server, theirs, { title: 'not yours' }, 'mallory');
    await settled(server);
  });
  afterAll(async () => {
    await agent?.close();
    await browser?.close();
    await server?.close();
  });

  /** A page whose console errors (CSP violations included) and dialogs are collected. */
  async function open(context: BrowserContext, path: string): Promise<{ page: Page; problems: string[] }> {
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('dialog', (d) => {
      problems.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
    await page.goto(`${server.url}${path}`);
    return { page, problems };
  }

  it('agents: my endpoint with its state, verbs, queue counts and webhook; nobody else’s', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    try {
      const { page, problems } = await open(context, '/agents');
      const row = page.locator(`tr[data-endpoint="${mine.slug}"]`);
      await expect(row.getAttribute('data-state')).resolves.toBe('active');
      expect(await row.locator('[data-queue="work"] [data-count="pending"]').textContent()).toBe('1');
      expect(await row.locator('td[data-label="Verbs"]').textContent()).toContain('claim_next');
      await expect(row.locator(`a[href="/webhooks/${mine.webhookId}"]`).count()).resolves.toBe(1);
      expect(await page.locator(`tr[data-endpoint="${theirs.slug}"]`).count()).toBe(0);

      // Live: a claim moves the counts without a reload.
      leaseId = (await agent.ok<{ lease_id: string }>('claim_next', {})).lease_id;
      await page
        .locator(`tr[data-endpoint="${mine.slug}"] [data-queue="work"] [data-count="claimed"]`, {
          hasText: '1',
        })
        .waitFor({ timeout: 15_000 });
      expect(await page.title()).not.toBe('pwned');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('todos: lease, attempts and last error, live; filtered by state; inert payload and the history', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    try {
      const { page, problems } = await open(context, '/todos');
      const row = page.locator(`tr[data-todo="${todoId}"]`);
      await expect(row.getAttribute('data-state')).resolves.toBe('claimed');
      expect(await row.locator('[data-field="lease"]').textContent()).toContain(mine.slug);
      expect(await row.locator('[data-field="title"]').textContent()).toBe(`fix ${XSS}`);
      expect(await page.locator(`tr[data-todo]`, { hasText: 'not yours' }).count()).toBe(0);

      // The agent fails it (retryable): pending again with one attempt and the reason, live.
      await agent.ok('fail', {
        todo_id: todoId,
        lease_id: leaseId,
        reason: 'upstream said <b>no</b>',
        retryable: true,
      });
      await page.locator(`tr[data-todo="${todoId}"][data-state="pending"]`).waitFor({ timeout: 15_000 });
      expect(await row.locator('[data-field="attempts"]').textContent()).toBe('1');
      expect(await row.locator('[data-field="last_error"]').textContent()).toBe('upstream said <b>no</b>');

      // Filtered by state, with the queue.
      await page.locator('#f-queue').selectOption(`${mine.slug}/work`);
      await page.locator('#f-state').selectOption('completed');
      await page.getByRole('button', { name: 'Apply' }).click();
      await page.waitForURL(/state=completed/);
      await page.locator('#todo-results', { hasText: 'No todo matches these filters.' }).waitFor();
      await page.locator('#f-state').selectOption('pending');
      await page.getByRole('button', { name: 'Apply' }).click();
      await page.locator(`tr[data-todo="${todoId}"]`).waitFor();

      // The detail page: the payload as text, the history from the todo's stream.
      await page.locator(`a[href="/todos/${todoId}"]`).click();
      await page.waitForURL(new RegExp(`/todos/${todoId}$`));
      expect(await page.locator('[data-field="payload"]').textContent()).toContain(
        '<script>document.title=\\"pwned\\"</script>',
      );
      expect(await page.locator('#todo-detail script, #todo-detail img').count()).toBe(0);
      expect(
        await page
          .locator('tr[data-history]')
          .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-history'))),
      ).toEqual(['TodoCreated', 'TodoClaimed', 'TodoFailed']);
      expect(await page.locator('tr[data-history="TodoCreated"]').textContent()).toContain('admin');
      expect(await page.locator('tr[data-history="TodoFailed"]').textContent()).toContain('attempt 1 of');

      // Live on the detail page too: the next claim appears in the history.
      await agent.ok('claim_next', {});
      await page.locator('tr[data-history]').nth(3).waitFor({ timeout: 15_000 });
      expect(await page.locator('[data-field="state"]').first().textContent()).toBe('claimed');
      expect(await page.title()).not.toBe('pwned');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('webhooks: scheme, read-only rules, routes, and deliveries with the faulted one first', async () => {
    await post(mine.ingestUrl, { kind: 'first' });
    await agent.ok('add_webhook_route', { webhook_id: mine.webhookId, queue: 'work', event_type: 'build' });
    await agent.ok('set_webhook_rules', {
      webhook_id: mine.webhookId,
      rules: [
        {
          id: 'strict',
          source: "(d) => { if (d.payload.kind === 'bad') throw new Error('no'); return 'continue'; }",
        },
      ],
    });
    const faulted = (await (await post(mine.ingestUrl, { kind: 'bad' })).json()) as { id: number };
    const routed = (await (await post(mine.ingestUrl, { kind: 'good' })).json()) as { id: number };
    await settled(server);

    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    try {
      const { page, problems } = await open(context, '/webhooks');
      await page.locator(`tr[data-webhook="${mine.webhookId}"] a`).click();
      await page.waitForURL(new RegExp(`/webhooks/${mine.webhookId}$`));
      expect(await page.locator('[data-field="scheme"]').textContent()).toBe('URL token only');
      expect(await page.locator('[data-rule="strict"] pre').textContent()).toContain("throw new Error('no')");
      expect(await page.locator('[data-rule="strict"] form, [data-rule="strict"] textarea').count()).toBe(0);
      expect(await page.locator('tr[data-route]').textContent()).toContain('build');
      const rows = page.locator('tr[data-delivery]');
      expect(await rows.first().getAttribute('data-delivery')).toBe(String(faulted.id));
      expect(await rows.first().getAttribute('data-disposition')).toBe('faulted');
      expect(await page.locator(`tr[data-delivery="${routed.id}"]`).getAttribute('data-disposition')).toBe(
        'routed',
      );
      await rows.first().locator('a').click();
      await page.waitForURL(new RegExp(`/log/${faulted.id}$`));
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
    // Someone else's webhook is not found.
    const other = await fetch(`${server.url}/webhooks/${theirs.webhookId}`);
    expect(other.status).toBe(404);
  });

  it('on a phone the tables stack into cards and nothing scrolls sideways', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true });
    try {
      for (const path of [
        '/agents',
        '/todos',
        `/todos/${todoId}`,
        '/webhooks',
        `/webhooks/${mine.webhookId}`,
      ]) {
        const { page, problems } = await open(context, path);
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        expect(overflow, path).toBeLessThanOrEqual(0);
        const heads = await page
          .locator('table.table--stack thead')
          .evaluateAll((els) => els.map((el) => getComputedStyle(el).display));
        expect(
          heads.every((d) => d === 'none'),
          path,
        ).toBe(true);
        await expect(
          page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Todos' }).isVisible(),
        ).resolves.toBe(true);
        expect(problems, path).toEqual([]);
        await page.close();
      }
    } finally {
      await context.close();
    }
  });

  it('answers a bad filter with a 400 problem and a todo of someone else with a 404', async () => {
    const bad = await fetch(`${server.url}/todos?state=sleeping`, {
      headers: { accept: 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'invalid_filter', field: 'state' });
    const theirTodo = await server.runtime.db
      .selectFrom('todos')
      .select('id')
      .where('operator', '=', 'mallory')
      .executeTakeFirstOrThrow();
    expect((await fetch(`${server.url}/todos/${theirTodo.id}`)).status).toBe(404);
    expect((await fetch(`${server.url}/todos?queue=${theirs.slug}%2Fsecret`)).status).toBe(404);
  });
});
