import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { verify as verifyCodehost } from '@octokit/webhooks-methods';
import type { Browser } from 'playwright-core';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPLAY_BOUND } from '../../src/http/stream.ts';
import { createRetentionJob } from '../../src/retention/job.ts';
import { changeSettings } from '../../src/settings/change.ts';
import { startServer, type TestServer } from '../auth/server.ts';
import { vendWithTargets } from '../mcp/rules-support.ts';
import { settled } from '../mcp/support.ts';
import { freePort, type ServerProcess, signedDelivery, startHookline } from '../server/harness.ts';
import { chromiumAvailable, decideInChromium, launchChromium } from '../support/chromium.ts';
import { freshDataDir, removeDataDir } from '../support/embedded.ts';
import { codehostSignature } from '../support/senders.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';
import { finished, start, waitForOutput } from './cli.ts';

/**
 * `hookline forward` (the real binary) from a running server to a local receiver that checks each
 * copy with the providers' own verification code (@octokit/webhooks-methods for the code host,
 * the `stripe` package for payments), keyed by the secret the forwarder printed at start.
 */
const hasChromium = chromiumAvailable();
const hasPg = await postgresAvailable();
const CODEHOST_SECRET = 'upstream-codehost-secret';
const PAYMENTS_SECRET = 'whsec_upstream_payments_secret';
const stripe = new Stripe('sk_test_not_used');

interface Received {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly verified: boolean;
}

/**
 * The local app: verifies as a real one would, answers 200 when the signature holds, else 400.
 * `hold(n)`, when given, is awaited before answering the n-th request (from 0): a slow app.
 */
function startReceiver(secret: Promise<string>, hold?: (n: number) => Promise<void> | undefined) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const key = await secret;
      let verified = false;
      if (typeof req.headers['x-hub-signature-256'] === 'string') {
        verified = await verifyCodehost(key, body.toString('utf8'), req.headers['x-hub-signature-256']);
      } else if (typeof req.headers['stripe-signature'] === 'string') {
        try {
          stripe.webhooks.constructEvent(body, req.headers['stripe-signature'], key);
          verified = true;
        } catch {
          verified = false;
        }
      }
      const n = received.push({ path: req.url ?? '', headers: req.headers, body, verified }) - 1;
      await hold?.(n);
      res.writeHead(verified ? 200 : 400).end();
    });
  });
  return {
    received,
    listening: new Promise<string>((resolve) =>
      server.listen(0, '127.0.0.1', () => {
        const a = server.address();
        resolve(`http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}/hook`);
      }),
    ),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A `hookline forward` being run: what it wrote so far, and waits on it. */
interface Running {
  readonly seen: { readonly stdout: string; readonly stderr: string };
  /** Resolves once `test` gives a value; rejects after 30 s. */
  until<T>(what: string, test: () => T | undefined): Promise<T>;
  /** Resolves once `count` lines are on stdout, parsed. */
  lines(count: number): Promise<Record<string, unknown>[]>;
}

/**
 * Runs `hookline forward --json` against a receiver of its own until `count` lines are out (after
 * `during`); returns them, what the receiver got, the secret and stderr. Ctrl-C ends it: exit 0.
 */
async function runForward(
  env: Record<string, string>,
  args: string[],
  count: number,
  during: (run: Running) => Promise<void> = async () => {},
  hold?: (n: number) => Promise<void> | undefined,
) {
  let resolveSecret: (s: string) => void = () => {};
  const secret = new Promise<string>((r) => {
    resolveSecret = r;
  });
  const receiver = startReceiver(secret, hold);
  const to = await receiver.listening;
  const child = start(['forward', '--to', to, '--json', ...args], env);
  // Everything the child writes is kept from its start: a line printed before the test looks
  // (the replayed delivery can come before the live part begins) must not be missed.
  const seen = { stdout: '', stderr: '' };
  const waiters = new Set<() => void>();
  for (const name of ['stdout', 'stderr'] as const) {
    child[name]?.on('data', (d: Buffer) => {
      seen[name] += d.toString();
      for (const w of waiters) w();
    });
  }
  const until = <T>(what: string, test: () => T | undefined): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const check = () => {
        const v = test();
        if (v === undefined) return;
        waiters.delete(check);
        clearTimeout(timer);
        resolve(v);
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`no ${what} within 30 s; stdout: ${seen.stdout}; stderr: ${seen.stderr}`));
      }, 30_000);
      waiters.add(check);
      check();
    });
  const lines = (n: number) =>
    until(`${n} lines`, () => {
      const all = seen.stdout.split('\n').filter(Boolean);
      return all.length >= n ? all.map((l) => JSON.parse(l) as Record<string, unknown>) : undefined;
    });
  const run = finished(child);
  try {
    const printed = await until(
      'signing secret',
      () => seen.stderr.match(/Signing secret for your local app: (whsec_\S+)/)?.[1],
    );
    resolveSecret(printed);
    await until('"Following"', () => (/Following /.test(seen.stderr) ? true : undefined));
    await during({ seen, until, lines });
    const out = await lines(count);
    return { lines: out, received: receiver.received, secret: printed, stderr: seen.stderr };
  } finally {
    child.kill('SIGINT');
    const ended = await run;
    expect(ended.code, ended.stderr).toBe(0);
    await receiver.close();
  }
}

describe.runIf(hasChromium)('hookline forward', () => {
  let server: TestServer;
  let browser: Browser;
  let home: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    [server, browser] = await Promise.all([
      startServer({
        env: { HOOKLINE_CODEHOST_SECRET: CODEHOST_SECRET, HOOKLINE_PAYMENTS_SECRET: PAYMENTS_SECRET },
      }),
      launchChromium(),
    ]);
    home = await mkdtemp(path.join(tmpdir(), 'hookline-forward-'));
    env = { HOME: home, XDG_CONFIG_HOME: path.join(home, 'config'), HOOKLINE_URL: server.url };
    // `hookline login`, Allow pressed in Chromium.
    const child = start(['login', '--no-open'], env);
    const done = finished(child);
    const [url] = await waitForOutput(child, 'stderr', /http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+/);
    await decideInChromium(browser, url!, 'Allow');
    expect((await done).code).toBe(0);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  /** A signed code host delivery; `delivery` is its X-Codehost-Delivery (the dedup key). */
  const codehost = async (body: string, event: string, delivery = `dlv-${event}`) => {
    const res = await fetch(`${server.url}/webhooks/codehost`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'x-codehost-event': event,
        'x-codehost-delivery': delivery,
        'x-hub-signature-256': await codehostSignature(CODEHOST_SECRET, body),
      },
      body,
    });
    expect(res.status).toBe(202);
    return ((await res.json()) as { id: number }).id;
  };
  const payments = async (body: string) => {
    const res = await fetch(`${server.url}/webhooks/payments`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'stripe-signature': stripe.webhooks.generateTestHeaderString({
          payload: body,
          secret: PAYMENTS_SECRET,
        }),
      },
      body,
    });
    expect(res.status).toBe(202);
    return ((await res.json()) as { id: number }).id;
  };

  const forward = (args: string[], count: number, during?: (run: Running) => Promise<void>) =>
    runForward(env, args, count, during);

  it('replays from an id, then follows live: byte for byte, provider headers kept, re-signed so the providers’ code verifies', async () => {
    // Bytes a re-serialization would change: odd spacing, escapes, a non-ASCII character.
    const first = '{ "action":"opened" ,"n":1.50, "s":"\\u00e9\u00e9" }';
    const before = await codehost(first, 'issues');
    const push = '{"ref":"refs/heads/main",  "commits":[]}';
    const invoice = JSON.stringify({
      id: 'evt_1',
      object: 'event',
      type: 'invoice.paid',
      data: { object: {} },
    });
    let pushId = 0;
    let invoiceId = 0;
    const { lines, received } = await forward(['--from', String(before)], 3, async () => {
      pushId = await codehost(push, 'push');
      invoiceId = await payments(invoice);
    });
    expect(lines.map((l) => l.id)).toEqual([before, pushId, invoiceId]);
    expect(lines.map((l) => l.provider)).toEqual(['codehost', 'codehost', 'payments']);
    expect(lines.map((l) => l.event_type)).toEqual(['issues', 'push', 'invoice.paid']);
    expect(lines.map((l) => l.status)).toEqual([200, 200, 200]);
    expect(lines.every((l) => typeof l.latency_ms === 'number')).toBe(true);
    expect(received.map((r) => r.verified)).toEqual([true, true, true]);
    expect(received.map((r) => r.body.toString('utf8'))).toEqual([first, push, invoice]);
    expect(received[0]!.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(received[0]!.headers['x-codehost-event']).toBe('issues');
    expect(received[1]!.headers['x-codehost-delivery']).toBe('dlv-push');
    expect(received[0]!.path).toBe('/hook');
  });

  it('forwards only the provider asked for, and a receiver that refuses is reported, not fatal', async () => {
    const a = await codehost('{"skip":true}', 'push');
    const b = await payments(JSON.stringify({ id: 'evt_2', object: 'event', type: 'charge.failed' }));
    const { lines } = await forward(
      ['--provider', 'payments', '--type', 'charge.failed', '--from', String(a)],
      1,
    );
    expect(lines).toEqual([
      expect.objectContaining({ id: b, provider: 'payments', event_type: 'charge.failed', status: 200 }),
    ]);

    // A forwarder signing with a secret the app does not know: the app's 400 is the line's status.
    const c = await codehost('{"n":3}', 'push');
    const child = start(
      [
        'forward',
        '--to',
        (await startReceiverWith('not-the-secret')).url,
        '--json',
        '--from',
        String(c),
        '--secret',
        'whsec_other',
      ],
      env,
    );
    const [line] = await waitForOutput(child, 'stdout', /\{.*\}\n/);
    child.kill('SIGINT');
    await finished(child);
    expect(JSON.parse(line!)).toMatchObject({ id: c, status: 400 });
  });

  it('replays a range across another operator’s delivery: skipped, not the end of the range', async () => {
    const first = await codehost('{"range":"first"}', 'issues', 'dlv-range-first');
    // alice's endpoint webhook: a delivery this operator (admin) may not read, a 404 to them.
    const theirs = await vendWithTargets(server, [], 'alice');
    const res = await fetch(theirs.ingestUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"private":true}',
    });
    expect(res.status).toBe(202);
    const hidden = ((await res.json()) as { id: number }).id;
    const last = await codehost('{"range":"last"}', 'issues', 'dlv-range-last');
    expect(first < hidden && hidden < last, JSON.stringify({ first, hidden, last })).toBe(true);
    let live = 0;
    const { lines, received } = await forward(['--from', String(first)], 3, async () => {
      live = await codehost('{"range":"live"}', 'issues', 'dlv-range-live');
    });
    expect(lines.map((l) => l.id)).toEqual([first, last, live]);
    expect(received.map((r) => r.verified)).toEqual([true, true, true]);
    expect(received.map((r) => r.body.toString('utf8'))).not.toContain('{"private":true}');
  });

  // Last but one: retention prunes what the tests above delivered.
  it('says on stderr when --from is older than what the log keeps, and starts at the first kept id', async () => {
    const kept = [
      await codehost('{"kept":1}', 'push', 'dlv-kept-1'),
      await codehost('{"kept":2}', 'push', 'dlv-kept-2'),
    ];
    const { store, clock, db, sql, logger, projections } = server.runtime;
    const changed = await changeSettings(
      { store, clock },
      { type: 'ChangeSettings', values: { retention_max_rows: 2 }, actor: null },
    );
    if (changed.position) await projections.waitFor(changed.position, { timeoutMs: 10_000 });
    const ran = await createRetentionJob({ store, db, sql, clock, logger }).runOnce();
    expect(ran?.truncated_before_id, JSON.stringify({ ran, kept })).toBe(kept[0]);
    await settled(server);
    const { lines, stderr } = await forward(['--from', '1'], 2);
    expect(lines.map((l) => l.id)).toEqual(kept);
    expect(stderr).toContain(
      `--from 1 is older than what the log keeps: deliveries before #${kept[0]} were pruned by retention; forwarding from #${kept[0]}`,
    );
  });

  it('says what is wrong with --to', async () => {
    const child = start(['forward', '--to', 'ftp://example.test/x'], env);
    const run = await finished(child);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('must be an http:// or https:// URL');
  });
});

/**
 * `hookline forward` (the real binary) against `hookline serve` (the real binary) stopped and
 * started again on the same port and database, as test/cli/events-tail.e2e.test.ts does: the
 * forwarder waits, reconnects, and forwards every delivery once, in order.
 */
describe.runIf(hasChromium && hasPg)('hookline forward across a restart of the server', () => {
  let db: TestDatabase;
  let dir: string;
  let home: string;
  let browser: Browser;
  let server: ServerProcess | undefined;
  let port: number;
  const serverEnv = () => ({ DATABASE_URL: db.url, HOOKLINE_LOG_LEVEL: 'warn' });

  beforeAll(async () => {
    [db, dir, browser, port] = await Promise.all([
      createTestDatabase(),
      freshDataDir(),
      launchChromium(),
      freePort(),
    ]);
    server = await startHookline(dir, serverEnv(), { port });
    await server.healthy();
    home = await mkdtemp(path.join(tmpdir(), 'hookline-forward-restart-'));
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    if (server && server.child.exitCode === null) {
      server.kill('SIGTERM');
      await server.exited;
    }
    await db?.drop();
    if (dir) await removeDataDir(dir);
    if (home) await rm(home, { recursive: true, force: true });
  });

  /** `hookline login` (the real binary), its consent given in Chromium. */
  const signIn = async (env: Record<string, string>) => {
    const login = start(['login', '--no-open'], env);
    const loggedIn = finished(login);
    const [authorize] = await waitForOutput(
      login,
      'stderr',
      /http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+/,
    );
    await decideInChromium(browser, authorize!, 'Allow');
    expect((await loggedIn).code).toBe(0);
  };

  const deliver = async (url: string, n: number): Promise<number> => {
    const d = await signedDelivery(JSON.stringify({ n, at: Date.now() }));
    const res = await fetch(`${url}/webhooks/codehost`, { method: 'POST', headers: d.headers, body: d.body });
    expect(res.status).toBe(202);
    return ((await res.json()) as { id: number }).id;
  };

  it('resumes without a gap or a repeat', async () => {
    const url = server!.url;
    const env = { HOME: home, XDG_CONFIG_HOME: path.join(home, 'config'), HOOKLINE_URL: url };
    await signIn(env);

    // Three deliveries for the replay; the app is slow to answer the first, and the server stops
    // meanwhile: the replay's next read finds it gone, waits for it, and goes on.
    const sent: number[] = [];
    for (let i = 0; i < 3; i++) sent.push(await deliver(url, i));
    let firstArrived: () => void = () => {};
    const arrived = new Promise<void>((r) => {
      firstArrived = r;
    });
    let release: () => void = () => {};
    const released = new Promise<void>((r) => {
      release = r;
    });
    const hold = (n: number) => {
      if (n !== 0) return undefined;
      firstArrived();
      return released;
    };
    const during = async (run: Running) => {
      await arrived;
      server!.kill('SIGTERM');
      release(); // answered while the server stops
      expect((await server!.exited).code).toBe(0);
      await run.until('the lost connection', () =>
        /connection to .* lost/.test(run.seen.stderr) ? true : undefined,
      );
      await run.lines(1);

      server = await startHookline(dir, serverEnv(), { port });
      await server.healthy();
      // Some of these may land before the forwarder is back: it gets them by its Last-Event-ID.
      for (let i = 3; i < 6; i++) sent.push(await deliver(url, i));
      await run.lines(6);
      await run.until('the reconnection', () =>
        /reconnected to .* resuming after position/.test(run.seen.stderr) ? true : undefined,
      );
      // One more after the reconnect: nothing repeats behind the last line.
      sent.push(await deliver(url, 6));
    };
    const { lines, received, stderr } = await runForward(env, ['--from', String(sent[0])], 7, during, hold);
    expect(lines.map((l) => l.id)).toEqual(sent);
    expect(lines.map((l) => l.status)).toEqual(sent.map(() => 200));
    expect(received.map((r) => r.verified)).toEqual(sent.map(() => true));
    expect(received.map((r) => (JSON.parse(r.body.toString('utf8')) as { n: number }).n)).toEqual([
      0, 1, 2, 3, 4, 5, 6,
    ]);
    expect(stderr).not.toMatch(/could not replay/);
  }, 120_000);

  it('after more than the replay bound came while it was away, forwards the skipped ones from the log at once, and says so', async () => {
    const url = server!.url;
    const resetHome = await mkdtemp(path.join(tmpdir(), 'hookline-forward-reset-'));
    const env = { HOME: resetHome, XDG_CONFIG_HOME: path.join(resetHome, 'config'), HOOKLINE_URL: url };
    try {
      await signIn(env);

      const sent = [await deliver(url, 0)];
      const missed = DEFAULT_REPLAY_BOUND + 10;
      const during = async (run: Running) => {
        await run.lines(1);
        server!.kill('SIGTERM');
        expect((await server!.exited).code).toBe(0);
        await run.until('the lost connection', () =>
          /connection to .* lost/.test(run.seen.stderr) ? true : undefined,
        );
        // Meanwhile the same service answers on another port, which the forwarder does not know:
        // more deliveries than the stream replays after a reconnect.
        const other = await startHookline(dir, serverEnv());
        try {
          await other.healthy();
          for (let i = 1; i <= missed; i += 16) {
            const batch = Array.from({ length: Math.min(16, missed + 1 - i) }, (_, k) =>
              deliver(other.url, i + k),
            );
            sent.push(...(await Promise.all(batch)));
          }
        } finally {
          other.kill('SIGTERM');
          await other.exited;
        }
        server = await startHookline(dir, serverEnv(), { port });
        await server.healthy();
        await run.until('the forwarding from the log', () =>
          /could not replay .* forwarding the deliveries from #\d+ from the log/.test(run.seen.stderr)
            ? true
            : undefined,
        );
        await run.lines(1 + missed);
        // Live again behind them.
        sent.push(await deliver(url, missed + 1));
      };
      const { lines, received, stderr } = await runForward(
        env,
        ['--from', String(sent[0])],
        missed + 2,
        during,
      );
      expect(lines.map((l) => l.id)).toEqual([...sent].sort((a, b) => a - b));
      expect(new Set(lines.map((l) => l.id)).size).toBe(missed + 2);
      expect(received.every((r) => r.verified)).toBe(true);
      expect(stderr).toContain(`forwarding the deliveries from #${sent[0]! + 1} from the log`);
      expect(stderr).toMatch(new RegExp(`forwarded ${missed} from the log that the stream did not send`));
      expect(stderr).not.toMatch(/not shown here/);
    } finally {
      await rm(resetHome, { recursive: true, force: true });
    }
  }, 180_000);
});

const receivers: ReturnType<typeof startReceiver>[] = [];
async function startReceiverWith(secret: string) {
  const r = startReceiver(Promise.resolve(secret));
  receivers.push(r);
  return { url: await r.listening };
}
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
});
