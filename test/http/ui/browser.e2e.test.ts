import { existsSync, mkdirSync } from 'node:fs';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, isCI, postgresAvailable, type TestDatabase } from '../../support/services.ts';
import { sendCodehost, startTestServer, type TestServer, until } from './support.ts';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && isCI) throw new Error(`${CHROMIUM} is required under CI (apt-get install -y chromium)`);
if (!hasChromium) console.warn(`[skip] ${CHROMIUM} not found; browser tests skipped`);
const hasPg = await postgresAvailable();
const ARTIFACTS = 'test-artifacts/screens';

describe.runIf(hasChromium && hasPg)('screens in headless Chromium', () => {
  let db: TestDatabase;
  let s: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  /** The delivery recorded before the tests: its detail page is one of the screens checked. */
  let seededId = 0;
  /** Console errors (CSP violations are reported there), page errors and dialogs: all must stay empty. */
  const problems: string[] = [];
  let current = '';

  // caret 'initial': Playwright would otherwise inject a <style> to hide the caret, which the CSP refuses.
  const shot = (name: string, target: Page = page) =>
    target.screenshot({ path: `${ARTIFACTS}/${name}.png`, fullPage: true, caret: 'initial' });

  const watch = (p: Page) => {
    p.on('console', (m) => {
      // The 404, 409 and 422 answers are the point of three tests; htmx and Chromium log them.
      if (m.type() === 'error' && !/\b(404|409|422)\b/.test(m.text())) {
        problems.push(`${current}: console on ${p.url()}: ${m.text()}`);
      }
    });
    p.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    p.on('dialog', (d) => {
      problems.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
  };

  /** The page's EventSource is open (set by app.js on `open`). */
  const streamOpen = (p: Page = page) =>
    p.waitForSelector('.live-pill[data-stream="open"]', { timeout: 10_000 });

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    db = await createTestDatabase();
    s = await startTestServer({ databaseUrl: db.url });
    const seeded = await sendCodehost(
      s.url,
      { action: 'opened', repository: { full_name: 'acme/widgets' } },
      { event: 'pull_request' },
    );
    seededId = seeded.id;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    page = await context.newPage();
    watch(page);
  });

  beforeEach((ctx) => {
    current = ctx.task.name;
  });

  afterAll(async () => {
    await browser?.close();
    await s?.close();
    await db?.drop();
  });

  it('updates the dashboard live when a webhook arrives', async () => {
    await page.goto(`${s.url}/`);
    await streamOpen();
    const count = page.locator('[data-provider="codehost"] [data-field="recent_count"]');
    const before = Number(await count.textContent());
    const ack = await sendCodehost(s.url, { ref: 'refs/heads/main' }, { event: 'push' });
    await page.waitForSelector(`[data-live-log] tr[data-id="${ack.id}"]`, { timeout: 10_000 });
    await page.waitForFunction(
      (n) =>
        document.querySelector('[data-provider="codehost"] [data-field="recent_count"]')?.textContent ===
        String(n),
      before + 1,
    );
    expect(await page.getAttribute('.strip', 'data-connection')).toBe('receiving');
    expect(await page.textContent(`tr[data-id="${ack.id}"] [data-field="event_type"]`)).toBe('push');
    await shot('dashboard');
  });

  it('moves the connection strip and the counters with `status` messages, without a reload', async () => {
    // A server of its own whose activity window is short enough to watch it close.
    const quick = await startTestServer({ app: { live: { activityWindowMs: 3000 } } });
    const p = await context.newPage();
    watch(p);
    try {
      await p.goto(`${quick.url}/`);
      await streamOpen(p);
      expect(await p.getAttribute('.strip', 'data-connection')).toBe('idle');
      await p.evaluate(() => {
        (window as unknown as { __samePage?: boolean }).__samePage = true;
        // A wrong counter: only a `status` sets counters to what the read models say.
        const count = document.querySelector('[data-provider="codehost"] [data-field="recent_count"]');
        if (count) count.textContent = '999';
      });
      await sendCodehost(quick.url, { ref: 'refs/heads/main' }, { event: 'push' });
      await p.waitForSelector('.strip[data-connection="receiving"]', { timeout: 10_000 });
      // No event-received ever says idle: this comes from the `status` sent when the window closes.
      await p.waitForSelector('.strip[data-connection="idle"]', { timeout: 15_000 });
      expect(await p.textContent('.strip [data-connection-label]')).toBe('Idle');
      expect(await p.getAttribute('.live-pill', 'data-connection')).toBe('idle');
      expect(await p.textContent('[data-provider="codehost"] [data-field="recent_count"]')).toBe('1');
      expect(await p.textContent('[data-total-recent]')).toBe('1');
      // A `status` does not make a provider without its secret look ready (issue 15).
      expect(await p.textContent('[data-provider="payments"] [data-field="enabled"]')).toBe('Not configured');
      expect(await p.textContent('[data-provider="codehost"] [data-field="enabled"]')).toBe('Enabled');
      expect(await p.evaluate(() => (window as unknown as { __samePage?: boolean }).__samePage)).toBe(true);
      await shot('dashboard-idle-after-status', p);
    } finally {
      await p.close();
      await quick.close();
    }
  });

  it('prepends live rows to the log when they match the filters in view', async () => {
    await page.goto(`${s.url}/log?event_type=push`);
    await streamOpen();
    const other = await sendCodehost(s.url, { action: 'created' }, { event: 'issues' });
    const push = await sendCodehost(s.url, { ref: 'refs/heads/dev' }, { event: 'push' });
    await page.waitForSelector(`#log-results tr[data-id="${push.id}"]`, { timeout: 10_000 });
    expect(await page.locator(`#log-results tr[data-id="${other.id}"]`).count()).toBe(0);
    const first = await page.locator('#log-results tbody tr').first().getAttribute('data-id');
    expect(Number(first)).toBe(push.id);
    // The footer counts the rows shown, the live one included (issue 15).
    const rows = await page.locator('#log-results tbody tr').count();
    expect(await page.textContent('#log-results [data-shown-count]')).toBe(String(rows));
    await shot('log');
  });

  it('shows a mistyped URL and an unknown event as a page in the layout, not JSON', async () => {
    for (const [path, status, detail] of [
      ['/setings', 404, 'no route for GET /setings'],
      ['/log/99999999', 404, 'no event with id 99999999'],
    ] as const) {
      const res = await page.goto(`${s.url}${path}`);
      expect(res?.status(), path).toBe(status);
      expect(res?.headers()['content-type']).toMatch(/^text\/html/);
      expect(await page.textContent('main h1')).toBe('Not found');
      expect(await page.textContent('main [data-field="detail"]')).toBe(detail);
      expect(await page.locator('nav.nav a[href="/settings"]').count()).toBe(1);
    }
    await shot('not-found');
  });

  it('applies the filter form through htmx and keeps the URL', async () => {
    await page.goto(`${s.url}/log`);
    await page.fill('#f-type', 'issues');
    await page.click('.filters button[type="submit"]');
    await page.waitForURL(/event_type=issues/);
    const types = await page.locator('#log-results tbody [data-field="event_type"]').allTextContents();
    expect(types.length).toBeGreaterThan(0);
    expect(new Set(types)).toEqual(new Set(['issues']));
  });

  it('flips a provider toggle, and the receiver follows', async () => {
    await page.goto(`${s.url}/providers`);
    const toggle = page.locator('[data-provider-toggle="codehost"] button.switch');
    expect(await toggle.getAttribute('aria-checked')).toBe('true');
    await toggle.click();
    await page.waitForSelector('[data-provider-toggle="codehost"] button.switch[aria-checked="false"]');
    expect(await page.textContent('[data-provider-toggle="codehost"] .switch__label')).toBe('Disabled');
    await expect(sendCodehost(s.url, { x: 1 })).rejects.toThrow(/403/);
    await shot('providers-disabled');
    await page.locator('[data-provider-toggle="codehost"] button.switch').click();
    await page.waitForSelector('[data-provider-toggle="codehost"] button.switch[aria-checked="true"]');
    await sendCodehost(s.url, { x: 2 });
  });

  it('creates a generic provider and shows its token once', async () => {
    await page.goto(`${s.url}/providers`);
    await page.fill('#c-name', 'registry');
    await page.click('.create-form button[type="submit"]');
    await page.waitForSelector('#create-result .token-once');
    const token = (await page.textContent('#create-result .token-once'))?.trim() ?? '';
    expect(token.length).toBeGreaterThan(20);
    expect(await page.textContent('#create-result')).toContain('/webhooks/generic/registry');
    await shot('providers-created');
    // The same name again: the problem is shown in the form.
    await page.click('.create-form button[type="submit"]');
    await page.waitForSelector(
      '.create-form [data-form-error]:not([hidden]), .create-form [data-error-for]:not([hidden])',
    );
  });

  it('shows the 422 message of an invalid setting in the form, then saves a valid one', async () => {
    await page.goto(`${s.url}/settings`);
    await page.fill('#s-retry', '100');
    await page.click('#settings-panel button[type="submit"]');
    const error = page.locator('[data-error-for="sse_retry_ms"]');
    await error.waitFor({ state: 'visible' });
    expect(await error.textContent()).toContain('sse_retry_ms must be at least 250');
    expect(await page.getAttribute('#s-retry', 'aria-invalid')).toBe('true');
    await shot('settings-422');
    await page.fill('#s-retry', '1500');
    await page.click('#settings-panel button[type="submit"]');
    await page.waitForSelector('#settings-panel .saved');
    expect(await page.inputValue('#s-retry')).toBe('1500');
    expect(await page.locator('[data-error-for="sse_retry_ms"]').isVisible()).toBe(false);
  });

  it('renders hostile payloads and headers inert on every screen', async () => {
    const hostile = {
      script: '<script>window.__pwned = "script"; alert(1)</script>',
      img: '<img src=x onerror="window.__pwned = \'img\'; alert(2)">',
      textarea: '</textarea><img src=y onerror="window.__pwned = \'textarea\'; alert(3)">',
    };
    const ack = await sendCodehost(s.url, hostile, {
      event: '<img src=z onerror="window.__pwned = \'type\'">',
      headers: { 'x-evil': hostile.img, 'x-area': hostile.textarea, 'x-script': hostile.script },
    });
    await until(async () => (await fetch(`${s.url}/log/${ack.id}`)).status === 200 || undefined);
    for (const path of [`/log/${ack.id}`, '/log', '/']) {
      await page.goto(`${s.url}${path}`);
      await page.waitForTimeout(300);
      expect(await page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned)).toBeUndefined();
      expect(await page.locator('img[src="x"], img[src="y"], img[src="z"]').count()).toBe(0);
      expect(await page.locator('main script').count()).toBe(0);
    }
    await page.goto(`${s.url}/log/${ack.id}`);
    const raw = await page.textContent('.code--raw');
    expect(raw).toBe(JSON.stringify(hostile));
    expect(await page.textContent('main')).toContain(hostile.textarea);
    await shot('event-hostile');
    // A live row for a hostile event type stays text too.
    await page.goto(`${s.url}/log`);
    await streamOpen();
    const live = await sendCodehost(
      s.url,
      { again: true },
      { event: '<img src=x onerror="window.__pwned = \'live\'">' },
    );
    await page.waitForSelector(`tr[data-id="${live.id}"]`);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned)).toBeUndefined();
    expect(await page.textContent(`tr[data-id="${live.id}"] [data-field="event_type"]`)).toContain(
      '<img src=x',
    );
  });

  it('looks right in dark mode and on a phone', async () => {
    const dark = await browser.newContext({ colorScheme: 'dark', viewport: { width: 1280, height: 860 } });
    const phone = await browser.newContext({
      viewport: { width: 390, height: 844 },
      isMobile: true,
      hasTouch: true,
    });
    try {
      for (const [ctx, suffix] of [
        [dark, 'dark'],
        [phone, 'phone'],
      ] as const) {
        const p = await ctx.newPage();
        watch(p);
        for (const [name, path] of [
          ['dashboard', '/'],
          ['log', '/log'],
          ['detail', `/log/${seededId}`],
          ['providers', '/providers'],
          ['settings', '/settings'],
        ]) {
          await p.goto(`${s.url}${path}`);
          await p.waitForTimeout(200);
          await shot(`${name}-${suffix}`, p);
          if (suffix === 'phone') {
            // Nothing on any screen is wider than the phone's.
            const width = await p.evaluate(() => document.documentElement.scrollWidth);
            expect(width, path).toBeLessThanOrEqual(390);
            // Every link of the navigation is whole on the screen (issue 15: Settings was cut off).
            const cut = await p.evaluate(() =>
              Array.from(document.querySelectorAll('.nav a'))
                .filter((a) => {
                  const r = a.getBoundingClientRect();
                  const nav = a.parentElement!.getBoundingClientRect();
                  return (
                    r.left < 0 || r.right > window.innerWidth || r.right > nav.right + 1 || r.width === 0
                  );
                })
                .map((a) => a.textContent),
            );
            expect(cut, path).toEqual([]);
          }
        }
      }
    } finally {
      await dark.close();
      await phone.close();
    }
  });

  it('ran without a CSP violation, a script error or a dialog', () => {
    expect(problems).toEqual([]);
  });
});
