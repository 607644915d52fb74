import { existsSync } from 'node:fs';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { isCI } from './services.ts';

/**
 * Debian's Chromium, driven by playwright-core: the browser a person signs in and submits forms
 * with. Outside CI a machine without it skips the suites that need it; under CI=true they fail.
 */
export const CHROMIUM = '/usr/bin/chromium';

export function chromiumAvailable(): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (isCI) throw new Error(`${CHROMIUM} is required under CI (apt-get install -y chromium)`);
  console.warn(`[skip] ${CHROMIUM} not found; browser tests skipped`);
  return false;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
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
}

export interface ConsentOptions {
  /** Headers of every request (a forward-auth proxy's user header). */
  readonly headers?: Record<string, string>;
  /**
   * Serve the consent page under this Referrer-Policy instead of the server's (its header and its
   * `<meta name="referrer">`), to see what Chromium then posts.
   */
  readonly referrerPolicy?: string;
}

/**
 * A person at the browser: opens the authorization URL `hookline login` printed, and presses the
 * consent page's button (Allow or Deny). Resolves with the page the browser ends on (the CLI's
 * loopback callback page) and the requests' headers the consent form was posted with.
 */
export async function decideInChromium(
  browser: Browser,
  authorizationUrl: string,
  button: 'Allow' | 'Deny',
  options: ConsentOptions = {},
): Promise<{ url: string; title: string; text: string; posted: Record<string, string> }> {
  const context: BrowserContext = await browser.newContext(
    options.headers ? { extraHTTPHeaders: options.headers } : {},
  );
  try {
    const policy = options.referrerPolicy;
    if (policy) {
      await context.route(/\/oauth\/interaction\/[^/]+$/, async (route) => {
        if (route.request().method() !== 'GET') return route.continue();
        const response = await route.fetch();
        const body = (await response.text()).replace(
          /<meta name="referrer" content="[^"]*">/,
          `<meta name="referrer" content="${policy}">`,
        );
        await route.fulfill({
          response,
          body,
          headers: { ...response.headers(), 'referrer-policy': policy },
        });
      });
    }
    const page: Page = await context.newPage();
    await page.goto(authorizationUrl);
    await page.getByRole('heading', { name: /Sign in to hookline as/ }).waitFor();
    // A route sees only the first URL of a redirect chain: load the consent page again through it.
    // Then stop routing: a routed request is reported without the headers Chromium's network
    // stack adds (Sec-Fetch-*), and the form post must be seen as sent.
    if (policy) {
      await page.goto(page.url());
      await context.unrouteAll();
    }
    const [posted] = await Promise.all([
      page.waitForRequest((r) => r.method() === 'POST' && /\/oauth\/interaction\//.test(r.url())),
      page.waitForURL(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/),
      page.getByRole('button', { name: button }).click(),
    ]);
    await page.waitForLoadState('load');
    return {
      url: page.url(),
      title: await page.title(),
      text: (await page.textContent('body')) ?? '',
      posted: await posted.allHeaders(),
    };
  } finally {
    await context.close();
  }
}
