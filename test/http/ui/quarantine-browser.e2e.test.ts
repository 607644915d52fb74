import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../../mcp/rules-support.ts';
import { connectAgent, settled, startServer, type TestServer, vend } from '../../mcp/support.ts';
import { chromiumAvailable, launchChromium } from '../../support/chromium.ts';

/** The quarantine screen's release form, submitted in Chromium (htmx swaps the row). */
const hasChromium = chromiumAvailable();

describe.runIf(hasChromium)('releasing a held delivery in Chromium', () => {
  let server: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    [server, browser] = await Promise.all([startServer(), launchChromium()]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('shows the faulted delivery and releases it to the chosen queue', async () => {
    // The screens act for HOOKLINE_OPERATOR (admin) without a forward-auth proxy.
    const ep = await vend(server, { operator: 'admin', queue: 'work' });
    const agent = await connectAgent({ url: ep.url, token: ep.token });
    try {
      await agent.ok('set_webhook_rules', {
        webhook_id: ep.webhookId,
        rules: [{ id: 'strict', source: "(d) => { throw new Error('no ' + d.payload.kind); }" }],
      });
    } finally {
      await agent.close();
    }
    const ack = (await (await post(ep.ingestUrl, { kind: 'release-me' })).json()) as { id: number };
    await settled(server);

    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(`${server.url}/quarantine`);
      const row = page.locator('tr[data-held-row]', { has: page.locator(`a[href="/log/${ack.id}"]`) });
      await expect(row.getAttribute('data-released')).resolves.toBe('false');
      await row.locator('select[name="queue"]').selectOption('work');
      await row.getByRole('button', { name: 'Release' }).click();
      const released = page.locator('tr[data-held-row][data-released="true"]', {
        has: page.locator(`a[href="/log/${ack.id}"]`),
      });
      await released.waitFor({ timeout: 10_000 });
      expect(await released.locator('[data-field="released"]').textContent()).toMatch(
        /Released to work as td_[a-z2-7]{20} by admin/,
      );
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
