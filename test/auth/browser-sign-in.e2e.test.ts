import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finished, hookline, start, waitForOutput } from '../cli/cli.ts';
import { chromiumAvailable, decideInChromium, launchChromium } from '../support/chromium.ts';
import { startServer, type TestServer } from './server.ts';

/**
 * The sign-in as a person does it: `hookline login` (the real binary) prints the authorization
 * URL, Debian's Chromium opens it, the person presses a button on the consent page, and the CLI
 * ends signed in (or refused). No HTTP-level stand-in for the browser on this path.
 */
const hasChromium = chromiumAvailable();
const AUTHORIZE_URL = /http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+/;

describe.runIf(hasChromium)('sign-in with hookline login and Chromium', () => {
  let server: TestServer;
  let browser: Browser;
  let home: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    [server, browser] = await Promise.all([startServer(), launchChromium()]);
    home = await mkdtemp(path.join(tmpdir(), 'hookline-sign-in-'));
    env = { HOME: home, XDG_CONFIG_HOME: path.join(home, 'config'), HOOKLINE_URL: server.url };
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  /** Runs `hookline login --no-open` and has Chromium press `button` on the consent page. */
  async function loginPressing(
    button: 'Allow' | 'Deny',
    consent: Parameters<typeof decideInChromium>[3] = {},
  ) {
    const child = start(['login', '--no-open'], env);
    const done = finished(child);
    const [url] = await waitForOutput(child, 'stderr', AUTHORIZE_URL);
    const landed = await decideInChromium(browser, url, button, consent);
    return { landed, run: await done };
  }

  it('Allow: the CLI ends signed in, and whoami says who', async () => {
    const { landed, run } = await loginPressing('Allow');
    expect(landed.title).toBe('Signed in');
    expect(landed.text).toContain('You can close this tab');
    // What Chromium really sent with the consent form.
    expect(landed.posted['sec-fetch-site']).toBe('same-origin');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`Signed in to ${server.url} as admin.`);
    const who = await hookline(['whoami'], env);
    expect(who.code, who.stderr).toBe(0);
    expect(who.stdout.trim()).toBe(`admin at ${server.url}`);
  });

  it('Allow from a consent page served with Referrer-Policy: no-referrer (Origin: null) still signs in', async () => {
    // The page as an older hookline served it: Chromium then posts `Origin: null` beside
    // `Sec-Fetch-Site: same-origin`, which issue 15 saw refused with 403.
    const { landed, run } = await loginPressing('Allow', { referrerPolicy: 'no-referrer' });
    expect(landed.posted.origin).toBe('null');
    expect(landed.posted['sec-fetch-site']).toBe('same-origin');
    expect(landed.title).toBe('Signed in');
    expect(run.code, run.stderr).toBe(0);
    expect((await hookline(['whoami'], env)).stdout.trim()).toBe(`admin at ${server.url}`);
  });

  it('Deny: the CLI says the sign-in was refused and keeps nothing new', async () => {
    await hookline(['logout'], env);
    const { landed, run } = await loginPressing('Deny');
    expect(landed.title).toBe('Sign-in failed');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('sign-in refused: access_denied (the sign-in was declined)');
    await expect(stat(path.join(home, 'config', 'hookline', 'credentials.json'))).rejects.toThrow();
    const who = await hookline(['whoami'], env);
    expect(who.code).toBe(3);
  });
});
