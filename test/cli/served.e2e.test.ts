import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ServerProcess, startHookline } from '../server/harness.ts';
import { chromiumAvailable, decideInChromium, launchChromium } from '../support/chromium.ts';
import { freshDataDir, removeDataDir } from '../support/embedded.ts';
import { finished, hookline, start, waitForOutput } from './cli.ts';

/** Both sides as shipped: `hookline serve` (embedded) and the CLI, from login to a pushed todo. */
const hasChromium = chromiumAvailable();
let dir: string;
let dataDir: string;
let browser: Browser | undefined;
let server: ServerProcess;
let env: Record<string, string>;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'hookline-cli-served-'));
  dataDir = await freshDataDir();
  server = await startHookline(dataDir);
  [browser] = await Promise.all([launchChromium(), server.healthy()]);
  env = { HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'config'), HOOKLINE_URL: server.url };
});
afterAll(async () => {
  await browser?.close();
  if (server && server.child.exitCode === null) {
    server.kill('SIGTERM');
    await server.exited;
  }
  if (dir) await rm(dir, { recursive: true, force: true });
  if (dataDir) await removeDataDir(dataDir);
});

it.runIf(hasChromium)(
  'login (Allow in Chromium), vend, push and see the todo refused once revoked, against `hookline serve`',
  async () => {
    const child = start(['login', '--no-open'], env);
    const done = finished(child);
    const [url] = await waitForOutput(child, 'stderr', /http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+/);
    expect((await decideInChromium(browser!, url, 'Allow')).title).toBe('Signed in');
    const login = await done;
    expect(login.code, login.stderr).toBe(0);

    const vend = await hookline(['endpoints', 'vend', 'Served Bot', '--json'], env);
    expect(vend.code, vend.stderr).toBe(0);
    const { slug } = JSON.parse(vend.stdout) as { slug: string };
    const push = await hookline(['todos', 'push', slug, 'Hello from the CLI', '--json'], env);
    expect(push.code, push.stderr).toBe(0);
    expect(JSON.parse(push.stdout)).toMatchObject({ created: true, state: 'pending', slug });
    expect((await hookline(['endpoints', 'revoke', slug], env)).code).toBe(0);
    const late = await hookline(['todos', 'push', slug, 'Too late'], env);
    expect(late.code).toBe(1);
    expect(late.stderr).toContain('HTTP 409');
  },
);
