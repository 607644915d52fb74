import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { verify as verifyCodehost } from '@octokit/webhooks-methods';
import type { Browser } from 'playwright-core';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../auth/server.ts';
import { chromiumAvailable, decideInChromium, launchChromium } from '../support/chromium.ts';
import { finished, start, waitForOutput } from './cli.ts';

/**
 * `hookline forward` (the real binary) from a running server to a local receiver that checks each
 * copy with the providers' own verification code (@octokit/webhooks-methods for the code host,
 * the `stripe` package for payments), keyed by the secret the forwarder printed at start.
 */
const hasChromium = chromiumAvailable();
const CODEHOST_SECRET = 'upstream-codehost-secret';
const PAYMENTS_SECRET = 'whsec_upstream_payments_secret';
const stripe = new Stripe('sk_test_not_used');

interface Received {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly verified: boolean;
}

/** The local app: verifies as a real one would, answers 200 when the signature holds, else 400. */
function startReceiver(secret: Promise<string>) {
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
      received.push({ path: req.url ?? '', headers: req.headers, body, verified });
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

  const codehost = async (body: string, event: string) => {
    const res = await fetch(`${server.url}/webhooks/codehost`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'x-codehost-event': event,
        'x-codehost-delivery': `dlv-${event}`,
        'x-hub-signature-256': `sha256=${createHmac('sha256', CODEHOST_SECRET).update(body).digest('hex')}`,
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

  /** Runs `hookline forward` until `count` lines are out; returns them, the secret and stderr. */
  async function forward(args: string[], count: number, during: () => Promise<void> = async () => {}) {
    let resolveSecret: (s: string) => void = () => {};
    const secret = new Promise<string>((r) => {
      resolveSecret = r;
    });
    const receiver = startReceiver(secret);
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
    const run = finished(child);
    try {
      const printed = await until(
        'signing secret',
        () => seen.stderr.match(/Signing secret for your local app: (whsec_\S+)/)?.[1],
      );
      resolveSecret(printed);
      await until('"Following"', () => (/Following /.test(seen.stderr) ? true : undefined));
      await during();
      const lines = await until(`${count} lines`, () => {
        const all = seen.stdout.split('\n').filter(Boolean);
        return all.length >= count ? all.map((l) => JSON.parse(l) as Record<string, unknown>) : undefined;
      });
      return { lines, received: receiver.received, secret: printed };
    } finally {
      child.kill('SIGINT');
      const ended = await run;
      expect(ended.code, ended.stderr).toBe(0);
      await receiver.close();
    }
  }

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

  it('says what is wrong with --to', async () => {
    const child = start(['forward', '--to', 'ftp://example.test/x'], env);
    const run = await finished(child);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('must be an http:// or https:// URL');
  });
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
