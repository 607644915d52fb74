import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sign as signCodehost } from '@octokit/webhooks-methods';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/cli/package.ts';
import { startServer, type TestServer } from '../auth/server.ts';
import { connectAgent } from '../mcp/support.ts';
import { chromiumAvailable, decideInChromium, launchChromium } from '../support/chromium.ts';
import { finished, hookline, start, waitForOutput } from './cli.ts';

const hasChromium = chromiumAvailable();
let server: TestServer;
let browser: Browser | undefined;
let home: string;
let env: Record<string, string>;
const credentialsFile = () => path.join(home, 'config', 'hookline', 'credentials.json');
const readCredentials = async () =>
  JSON.parse(await readFile(credentialsFile(), 'utf8')) as {
    servers: Record<
      string,
      { access_token: string; refresh_token: string; expires_at: number; operator: string }
    >;
  };

beforeAll(async () => {
  [server, browser] = await Promise.all([startServer(), hasChromium ? launchChromium() : undefined]);
  home = await mkdtemp(path.join(tmpdir(), 'hookline-cli-'));
  env = { HOME: home, XDG_CONFIG_HOME: path.join(home, 'config'), HOOKLINE_URL: server.url };
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

/** The one JSON error object a failing command writes to stderr under --json. */
const errorOf = (run: { stderr: string }) =>
  (JSON.parse(run.stderr.trim()) as { error: { code: string; message: string; exit_code: number } }).error;

/** `hookline login --no-open`, and Allow pressed in Chromium on the page it prints. */
async function login(): Promise<void> {
  const child = start(['login', '--no-open'], env);
  const done = finished(child);
  const [url] = await waitForOutput(child, 'stderr', /http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+/);
  expect((await decideInChromium(browser!, url, 'Allow')).title).toBe('Signed in');
  const run = await done;
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toContain(`Signed in to ${server.url} as admin.`);
}

describe.runIf(hasChromium)('the hookline command-line client', () => {
  it('tells the user to sign in before anything else', async () => {
    const run = await hookline(['agents', 'list'], env);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('not signed in');
    expect(run.stderr).toContain('hookline login');
  });

  it('signs in through the browser and keeps the token pair in a 0600 file', async () => {
    await login();
    const file = await stat(credentialsFile());
    expect(file.mode & 0o777).toBe(0o600);
    expect((await stat(path.dirname(credentialsFile()))).mode & 0o777).toBe(0o700);
    const stored = (await readCredentials()).servers[server.url];
    expect(stored).toMatchObject({ operator: 'admin', refresh_token: expect.any(String) });

    const who = await hookline(['whoami'], env);
    expect(who.code).toBe(0);
    expect(who.stdout.trim()).toBe(`admin at ${server.url}`);
    const whoJson = await hookline(['whoami', '--json'], env);
    expect(JSON.parse(whoJson.stdout)).toMatchObject({ operator: 'admin', server: server.url });
  });

  it('prints its own version and the server’s', async () => {
    const run = await hookline(['version'], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`client ${packageVersion()}`);
    expect(run.stdout).toContain(`server ${packageVersion()} at ${server.url}`);
    const json = JSON.parse((await hookline(['version', '--json'], env)).stdout);
    expect(json).toEqual({ client: packageVersion(), server: packageVersion(), url: server.url });
  });

  it('vends, lists, pushes (idempotently) and revokes', async () => {
    const vend = await hookline(['endpoints', 'vend', 'CLI Bot', '--json'], env);
    expect(vend.code, vend.stderr).toBe(0);
    const v = JSON.parse(vend.stdout) as { id: string; slug: string; token: string; agent_name: string };
    expect(v.token).toMatch(/^hlk_/);
    expect(v.slug).toMatch(/^cli-bot-[a-z2-7]{6}$/);

    const human = await hookline(['endpoints', 'vend', 'CLI Bot'], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/Token {8}hlk_/);
    expect(human.stdout).toContain('"mcpServers"');

    const list = await hookline(['endpoints', 'list', '--json'], env);
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout).map((e: { slug: string }) => e.slug)).toContain(v.slug);
    expect(list.stdout).not.toContain(v.token);
    const table = await hookline(['endpoints', 'list'], env);
    expect(table.stdout).toMatch(/^SLUG\s+AGENT\s+STATE/);

    const agents = await hookline(['agents', 'list', '--json'], env);
    expect(JSON.parse(agents.stdout).filter((a: { name: string }) => a.name === 'CLI Bot')).toHaveLength(1);

    const push = [
      'todos',
      'push',
      v.slug,
      'Check the deploy',
      '--key',
      'deploy-7',
      '--payload',
      '{"build":7}',
    ];
    const first = await hookline([...push, '--json'], env);
    expect(first.code, first.stderr).toBe(0);
    const todo = JSON.parse(first.stdout) as { id: string; created: boolean; state: string };
    expect(todo).toMatchObject({ created: true, state: 'pending' });
    const again = await hookline(push, env);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`A live todo already has that key: ${todo.id}`);

    const fromFile = path.join(home, 'payload.json');
    await writeFile(fromFile, '{"from":"file"}');
    expect(
      (await hookline(['todos', 'push', v.id, 'From a file', '--payload-file', fromFile], env)).code,
    ).toBe(0);
    expect(
      (await hookline(['todos', 'push', v.id, 'From stdin', '--payload-file', '-'], env, '[1,2]')).code,
    ).toBe(0);
    const badJson = await hookline(['todos', 'push', v.slug, 'x', '--payload', '{nope'], env);
    expect(badJson.code).toBe(1);
    expect(badJson.stderr).toContain('not JSON');

    const revoke = await hookline(['endpoints', 'revoke', v.slug], env);
    expect(revoke.code).toBe(0);
    expect(revoke.stdout).toContain(`Revoked ${v.slug}`);
    const late = await hookline(['todos', 'push', v.slug, 'Too late'], env);
    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(/revoked.*HTTP 409.*vend a new one/);
  });

  it('vends an endpoint on several queues and changes them with endpoints update', async () => {
    const vend = await hookline(
      ['endpoints', 'vend', 'Queue Bot', '--queue', 'inbox', '--queue', 'deploys', '--json'],
      env,
    );
    expect(vend.code, vend.stderr).toBe(0);
    const v = JSON.parse(vend.stdout) as { slug: string; queues: string[] };
    expect(v.queues).toEqual(['inbox', 'deploys']);

    const push = await hookline(['todos', 'push', v.slug, 'Ship it', '--queue', 'deploys', '--json'], env);
    expect(push.code, push.stderr).toBe(0);
    const refused = await hookline(['endpoints', 'update', v.slug, '--queue', 'inbox'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/deploys \(1\).*move_to.*HTTP 409/);

    const moved = await hookline(
      ['endpoints', 'update', v.slug, '--queue', 'inbox', '--queue', 'alerts', '--move-to', 'inbox'],
      env,
    );
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stdout).toContain('Queues       inbox, alerts');
    const narrowed = await hookline(
      ['endpoints', 'update', v.slug, '--verb', 'claim_next', '--verb', 'complete', '--json'],
      env,
    );
    expect(JSON.parse(narrowed.stdout)).toMatchObject({
      queues: ['inbox', 'alerts'],
      verbs: ['claim_next', 'complete'],
    });
    const quarantine = await hookline(['endpoints', 'update', v.slug, '--queue', 'quarantine'], env);
    expect(quarantine.code).toBe(1);
    expect(quarantine.stderr).toMatch(/reserved.*HTTP 400/);
    const nothing = await hookline(['endpoints', 'update', v.slug], env);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain('give --queue, --verb or both');
    const signed = await hookline(['endpoints', 'vend', 'Hub Bot', '--webhook-scheme', 'codehost'], env);
    expect(signed.code, signed.stderr).toBe(0);
    expect(signed.stdout).toContain('Signed by    codehost');
    const secret = /Secret {7}(\S+)/.exec(signed.stdout)?.[1];
    const ingest = /Webhook {6}(\S+)/.exec(signed.stdout)?.[1];
    expect(secret).toBeDefined();
    const body = '{"zen":"hi"}';
    const res = await fetch(ingest!, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'ping',
        'x-hub-signature-256': await signCodehost(secret!, body),
      },
      body,
    });
    expect(res.status).toBe(202);
    const badScheme = await hookline(['endpoints', 'vend', 'x', '--webhook-scheme', 'github'], env);
    expect(badScheme.code).toBe(1);
    expect(badScheme.stderr).toMatch(/HTTP 400/);
  });

  it('friends: takes requests, asks, approves, hands the credential over once, narrows, revokes, declines (the real binary)', async () => {
    const a = JSON.parse((await hookline(['endpoints', 'vend', 'Friendly Bot', '--json'], env)).stdout);
    const b = JSON.parse((await hookline(['endpoints', 'vend', 'Asking Bot', '--json'], env)).stdout);
    const on = await hookline(['friends', 'accept', a.slug, 'on'], env);
    expect(on.code, on.stderr).toBe(0);
    expect(on.stdout).toContain(`/a2a/${a.slug}/.well-known/agent-card.json`);
    const greedy = await hookline(['friends', 'ask', b.slug, a.slug, '--verb', 'create_webhook'], env);
    expect(greedy.code).toBe(1);
    expect(greedy.stderr).toMatch(/never be granted.*HTTP 400/);
    const asked = JSON.parse(
      (
        await hookline(
          ['friends', 'ask', b.slug, a.slug, '--verb', 'create_for', '--verb', 'claim_next', '--json'],
          env,
        )
      ).stdout,
    );
    expect(asked.state).toBe('pending');
    const approved = await hookline(
      ['friends', 'approve', asked.id, '--verb', 'create_for', '--verb', 'claim_next'],
      env,
    );
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain('Grant        create_for, claim_next');
    const list = JSON.parse((await hookline(['friends', 'list', '--json'], env)).stdout);
    expect(list.find((f: { id: string }) => f.id === asked.id)).toMatchObject({
      state: 'approved',
      credential: 'available',
    });
    const cred = await hookline(['friends', 'credential', asked.id], env);
    expect(cred.code, cred.stderr).toBe(0);
    expect(cred.stdout).toMatch(/Token {8}hlk_/);
    const twice = await hookline(['friends', 'credential', asked.id], env);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toMatch(/HTTP 409/);

    // narrow: the friendship and its friend endpoint keep create_for; claim_next is forbidden.
    const friend = await connectAgent({
      url: /MCP URL {6}(\S+)/.exec(cred.stdout)![1]!,
      token: /Token {8}(\S+)/.exec(cred.stdout)![1]!,
    });
    try {
      expect((await friend.client.listTools()).tools.map((t) => t.name).sort()).toEqual([
        'claim_next',
        'create_for',
      ]);
      const wider = await hookline(['friends', 'narrow', asked.id, '--verb', 'list_todos'], env);
      expect(wider.code).toBe(1);
      expect(wider.stderr).toMatch(/HTTP 400/);
      const narrowed = await hookline(['friends', 'narrow', asked.id, '--verb', 'create_for'], env);
      expect(narrowed.code, narrowed.stderr).toBe(0);
      expect(narrowed.stdout).toContain(`${asked.id}  approved`);
      expect(narrowed.stdout).toContain('Grant        create_for\n');
      expect(await friend.refused('claim_next', {})).toBe('forbidden');
      const json = JSON.parse((await hookline(['friends', 'list', '--json'], env)).stdout);
      expect(json.find((f: { id: string }) => f.id === asked.id)).toMatchObject({
        granted_verbs: ['create_for'],
      });
    } finally {
      await friend.close().catch(() => {});
    }
    const revoked = await hookline(['friends', 'revoke', asked.id], env);
    expect(revoked.stdout).toContain('revoked');

    // decline: a second request to the same endpoint, answered no.
    const again = JSON.parse(
      (await hookline(['friends', 'ask', b.slug, a.slug, '--verb', 'create_for', '--json'], env)).stdout,
    );
    const declined = await hookline(['friends', 'decline', again.id], env);
    expect(declined.code, declined.stderr).toBe(0);
    expect(declined.stdout).toContain(`${again.id}  declined`);
    const declinedJson = JSON.parse((await hookline(['friends', 'list', '--json'], env)).stdout);
    expect(declinedJson.find((f: { id: string }) => f.id === again.id)).toMatchObject({
      state: 'declined',
      granted_verbs: null,
      friend_endpoint: null,
    });
    const late = await hookline(['friends', 'approve', again.id], env);
    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(/declined.*HTTP 409/);
  });

  it('explains failures and what to do next', async () => {
    const unknown = await hookline(['todos', 'push', 'no-such-endpoint-aaaaaa', 'hi'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/HTTP 404.*hookline endpoints list/);
    const tooLong = await hookline(['todos', 'push', 'x-aaaaaa', 'x'.repeat(201)], env);
    expect(tooLong.stderr).toMatch(/200 characters.*HTTP 400/);
    const nowhere = await hookline(['providers', 'list', '--url', 'http://127.0.0.1:9'], env);
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toMatch(/cannot reach the server at http:\/\/127\.0\.0\.1:9.*hookline serve/);
    const badExpiry = await hookline(['endpoints', 'vend', 'x', '--expires', 'soon'], env);
    expect(badExpiry.code).not.toBe(0);
    expect(badExpiry.stderr).toMatch(/duration/);
  });

  it('refreshes an expired or refused access token on its own, rotating the stored pair', async () => {
    const before = (await readCredentials()).servers[server.url]!;
    // Expired by the clock: refreshed before the call.
    const all = await readCredentials();
    all.servers[server.url] = { ...before, expires_at: Date.now() - 1000 };
    await writeFile(credentialsFile(), JSON.stringify(all));
    expect((await hookline(['whoami'], env)).code).toBe(0);
    const afterExpiry = (await readCredentials()).servers[server.url]!;
    expect(afterExpiry.refresh_token).not.toBe(before.refresh_token);
    expect(afterExpiry.access_token).not.toBe(before.access_token);

    // Refused by the server (401): refreshed and retried once.
    const all2 = await readCredentials();
    all2.servers[server.url] = { ...afterExpiry, access_token: 'revoked-or-unknown' };
    await writeFile(credentialsFile(), JSON.stringify(all2));
    const run = await hookline(['agents', 'list', '--json'], env);
    expect(run.code, run.stderr).toBe(0);
    expect((await readCredentials()).servers[server.url]!.refresh_token).not.toBe(afterExpiry.refresh_token);
  });

  it('parallel commands refresh once between them and stay signed in', async () => {
    const all = await readCredentials();
    all.servers[server.url] = { ...all.servers[server.url]!, expires_at: Date.now() - 1000 };
    await writeFile(credentialsFile(), JSON.stringify(all));
    const runs = await Promise.all(Array.from({ length: 4 }, () => hookline(['whoami'], env)));
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    expect((await hookline(['whoami'], env)).code).toBe(0);
  });

  it('follows the live log with events tail', async () => {
    const vend = JSON.parse((await hookline(['endpoints', 'vend', 'Tail Bot', '--json'], env)).stdout) as {
      slug: string;
    };
    const tail = start(['events', 'tail', '--provider', 'operator', '--count', '1', '--json'], env);
    const done = finished(tail);
    // The stream is open once it reports so on stderr (human mode) or after a moment (JSON mode):
    // push until the tail sees one; each push is an operator delivery.
    let pushed = 0;
    const pusher = (async () => {
      while (tail.exitCode === null && pushed < 20) {
        await hookline(['todos', 'push', vend.slug, `tail ${pushed++}`], env);
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    const run = await done;
    await pusher;
    expect(run.code, run.stderr).toBe(0);
    const line = JSON.parse(run.stdout.trim().split('\n')[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({ provider: 'operator', trust_mode: 'operator', verified: true });
  });

  it('lists and shows accepted events', async () => {
    const vend = JSON.parse((await hookline(['endpoints', 'vend', 'Events Bot', '--json'], env)).stdout) as {
      slug: string;
    };
    const push = await hookline(['todos', 'push', vend.slug, 'seen in the log', '--json'], env);
    expect(push.code, push.stderr).toBe(0);
    const eventId = (JSON.parse(push.stdout) as { event_id: number }).event_id;

    const list = await hookline(
      ['events', 'list', '--provider', 'operator', '--since', String(eventId), '--json'],
      env,
    );
    expect(list.code, list.stderr).toBe(0);
    const page = JSON.parse(list.stdout) as {
      events: { id: number; provider: string }[];
      next_cursor: unknown;
    };
    expect(page.events.map((e) => e.id)).toContain(eventId);
    expect(page.events.every((e) => e.provider === 'operator')).toBe(true);

    const table = await hookline(['events', 'list', '--limit', '1'], env);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^ID\s+RECEIVED_AT\s+PROVIDER/);
    expect(table.stdout).toContain('More: hookline events list --cursor ');
    const cursor = /--cursor (\S+)/.exec(table.stdout)![1]!;
    const next = await hookline(['events', 'list', '--limit', '1', '--cursor', cursor, '--json'], env);
    expect(next.code, next.stderr).toBe(0);

    const show = await hookline(['events', 'show', String(eventId), '--json'], env);
    expect(show.code, show.stderr).toBe(0);
    const detail = JSON.parse(show.stdout) as {
      id: number;
      payload: string;
      encoding: string;
      headers: object;
    };
    expect(detail).toMatchObject({ id: eventId, encoding: 'utf-8', headers: expect.any(Object) });
    expect(JSON.parse(detail.payload)).toMatchObject({ title: 'seen in the log' });
    const human = await hookline(['events', 'show', String(eventId)], env);
    expect(human.stdout).toContain(`Event #${eventId}  operator  todo.push`);
    expect(human.stdout).toContain('seen in the log');

    const missing = await hookline(['events', 'show', '999999999', '--json'], env);
    expect(missing.code).toBe(1);
    expect(errorOf(missing)).toMatchObject({ code: 'not_found' });
    const bad = await hookline(['events', 'list', '--limit', '0', '--json'], env);
    expect(bad.code).toBe(1);
    expect(errorOf(bad)).toMatchObject({ code: 'invalid_filter' });
    expect((await hookline(['events', 'show', 'abc'], env)).code).toBe(1);
  });

  it('searches the log with events list --q, with the other filters and the cursor', async () => {
    const vend = JSON.parse((await hookline(['endpoints', 'vend', 'Search Bot', '--json'], env)).stdout) as {
      slug: string;
    };
    const pushed: number[] = [];
    for (const title of ['quixotic lantern one', 'quixotic lantern two', 'plain title']) {
      const push = await hookline(['todos', 'push', vend.slug, title, '--json'], env);
      expect(push.code, push.stderr).toBe(0);
      pushed.push((JSON.parse(push.stdout) as { event_id: number }).event_id);
    }
    const ids = async (args: string[]) => {
      const run = await hookline(['events', 'list', ...args, '--json'], env);
      expect(run.code, run.stderr).toBe(0);
      return (JSON.parse(run.stdout) as { events: { id: number }[] }).events.map((e) => e.id);
    };
    expect(await ids(['--q', 'QUIXOTIC lantern'])).toEqual([pushed[1], pushed[0]]);
    expect(await ids(['--q', 'quixotic -two'])).toEqual([pushed[0]]);
    expect(await ids(['--q', '"lantern two"', '--provider', 'operator'])).toEqual([pushed[1]]);
    expect(await ids(['--q', 'quixotic', '--provider', 'codehost'])).toEqual([]);
    expect(await ids(['--q', 'quixotic', '--since', String(pushed[1])])).toEqual([pushed[1]]);

    // The table's next-page line keeps the search: pasted, it gives the older match.
    const table = await hookline(['events', 'list', '--q', 'quixotic lantern', '--limit', '1'], env);
    expect(table.code, table.stderr).toBe(0);
    const more = /More: hookline events list (.*)$/m.exec(table.stdout)?.[1];
    expect(more).toMatch(/--cursor \S+ --q 'quixotic lantern' --limit 1$/);
    const cursor = /--cursor (\S+)/.exec(more!)![1]!;
    expect(await ids(['--cursor', cursor, '--q', 'quixotic lantern', '--limit', '1'])).toEqual([pushed[0]]);

    const long = await hookline(['events', 'list', '--q', 'x'.repeat(201), '--json'], env);
    expect(long.code).toBe(1);
    expect(errorOf(long)).toMatchObject({ code: 'invalid_filter' });
    expect(errorOf(long).message).toMatch(/q is longer than 200 characters/);
  });

  it('adds a generic provider and toggles it', async () => {
    const add = await hookline(['providers', 'add-generic', 'cli-registry', '--json'], env);
    expect(add.code, add.stderr).toBe(0);
    const p = JSON.parse(add.stdout) as { name: string; token: string; enabled: boolean };
    expect(p.name).toBe('generic:cli-registry');
    expect(p.token).toBeTypeOf('string');
    const enable = await hookline(['providers', 'enable', 'generic:cli-registry'], env);
    expect(enable.code, enable.stderr).toBe(0);
    expect(enable.stdout).toContain('generic:cli-registry is enabled');
    const disable = await hookline(['providers', 'disable', 'generic:cli-registry', '--json'], env);
    expect(JSON.parse(disable.stdout)).toMatchObject({ enabled: false });
    const missing = await hookline(['providers', 'enable', 'generic:nope'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/HTTP 404/);
  });

  it('shares one sign-in between localhost and 127.0.0.1, and tells an unreachable server from a missing sign-in', async () => {
    const port = new URL(server.url).port;
    const alias = `http://localhost:${port}`;
    const who = await hookline(['whoami', '--url', alias], env);
    expect(who.code, who.stderr).toBe(0);
    expect(who.stdout.trim()).toBe(`admin at ${alias}`);
    expect(Object.keys((await readCredentials()).servers)).toEqual([server.url]);

    const nowhere = await hookline(['whoami', '--url', 'http://127.0.0.1:9'], env);
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toMatch(/cannot reach the server at http:\/\/127\.0\.0\.1:9/);
    expect(nowhere.stderr).not.toContain('not signed in');
  });

  it('words the small failures for a person, and for a script under --json', async () => {
    const bare = await hookline(['providers', 'enable', 'ci'], env);
    expect(bare.code).toBe(1);
    expect(bare.stderr).toContain('try `hookline providers enable generic:ci`');
    expect(bare.stderr).not.toContain('endpoints list');

    const badName = await hookline(['providers', 'add-generic', 'Bad Name'], env);
    expect(badName.code).toBe(1);
    expect(badName.stderr).toContain(
      "the name must be 1 to 64 characters, lowercase letters, digits, '-' or '_'",
    );
    expect(badName.stderr).not.toContain('^[a-z0-9]');

    const help = await hookline(['login', '--help'], env);
    expect(help.stdout.replace(/\s+/g, ' ')).toContain('(default: any free port)');
    expect(help.stdout).not.toContain('(default: 0)');

    const unreachable = await hookline(['whoami', '--json', '--url', 'http://127.0.0.1:9'], env);
    expect(unreachable.code).toBe(1);
    expect(errorOf(unreachable)).toMatchObject({ code: 'unreachable', exit_code: 1 });
    const missing = await hookline(['todos', 'push', 'no-such-endpoint-aaaaaa', 'hi', '--json'], env);
    expect(errorOf(missing)).toMatchObject({ code: 'not_found', exit_code: 1 });
    expect(errorOf(missing).message).toMatch(/HTTP 404/);
    const usage = await hookline(['endpoints', 'vend', '--json'], env);
    expect(usage.code).toBe(1);
    expect(errorOf(usage)).toMatchObject({ code: 'usage', exit_code: 1 });
  });

  it('has --help on every command', async () => {
    const commands = [
      ['login'],
      ['logout'],
      ['whoami'],
      ['version'],
      ['agents', 'list'],
      ['endpoints', 'vend'],
      ['endpoints', 'list'],
      ['endpoints', 'update'],
      ['endpoints', 'revoke'],
      ['todos', 'push'],
      ['providers', 'list'],
      ['providers', 'add-generic'],
      ['providers', 'enable'],
      ['providers', 'disable'],
      ['events', 'tail'],
      ['events', 'list'],
      ['events', 'show'],
      ['events', 'replay'],
      ['friends', 'list'],
      ['friends', 'ask'],
      ['friends', 'approve'],
      ['friends', 'decline'],
      ['friends', 'narrow'],
      ['friends', 'revoke'],
      ['friends', 'withdraw'],
      ['friends', 'credential'],
      ['friends', 'accept'],
    ];
    const runs = await Promise.all(commands.map((command) => hookline([...command, '--help'], env)));
    runs.forEach((run, i) => {
      const command = commands[i]!.join(' ');
      expect(run.code, `${command}: ${run.stderr}`).toBe(0);
      expect(run.stdout).toContain(`Usage: hookline ${command}`);
    });
  });

  it('logs out: the sign-in is revoked at the server and forgotten here', async () => {
    const before = (await readCredentials()).servers[server.url]!;
    const run = await hookline(['logout'], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`Signed out of ${server.url}.`);
    await expect(stat(credentialsFile())).rejects.toThrow();
    const res = await fetch(`${server.url}/api/v1/me`, {
      headers: { authorization: `Bearer ${before.access_token}` },
    });
    expect(res.status).toBe(401);
    const who = await hookline(['whoami'], env);
    expect(who.code).toBe(3);
    expect(who.stderr).toContain('hookline login');
  });
});
