import type { ChildProcess } from 'node:child_process';
import Stripe from 'stripe';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_REPLAY_BOUND } from '../../src/http/stream.ts';
import { freePort, type ServerProcess, signedDelivery, startHookline } from '../server/harness.ts';
import { freshDataDir, removeDataDir } from '../support/embedded.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';
import { finished, start } from './cli.ts';

/**
 * `hookline events tail` (the real binary) against `hookline serve` (the real binary) that is
 * stopped and started again: the tail stays, says so on stderr, and shows every delivery once.
 * Deliveries of two providers, signed with each one's own code (the `stripe` package for
 * payments), prove `--provider` and `--type`.
 */
const PAYMENTS_SECRET = 'whsec_events_tail_payments';
const stripe = new Stripe('sk_test_not_used');
const hasPg = await postgresAvailable();
let db: TestDatabase;
let dir: string;
let server: ServerProcess | undefined;
const tails: ChildProcess[] = [];

beforeAll(async () => {
  if (!hasPg) return;
  db = await createTestDatabase();
  dir = await freshDataDir();
});
afterAll(async () => {
  // A test that failed half-way leaves no tail behind.
  for (const child of tails) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  if (server && server.child.exitCode === null) {
    server.kill('SIGTERM');
    await server.exited;
  }
  await db?.drop();
  if (dir) await removeDataDir(dir);
});

async function deliver(url: string, type: string): Promise<number> {
  const d = await signedDelivery(JSON.stringify({ type, at: Date.now() }));
  const res = await fetch(`${url}/webhooks/codehost`, {
    method: 'POST',
    headers: { ...d.headers, 'x-codehost-event': type },
    body: d.body,
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: number }).id;
}

/** A payments delivery of event type `type`, signed as the provider signs it. */
async function deliverPayment(url: string, type: string): Promise<number> {
  const body = JSON.stringify({ id: `evt_${Date.now()}`, object: 'event', type });
  const res = await fetch(`${url}/webhooks/payments`, {
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
}

let tailExited = false;

/** Resolves once `test()` gives a value (checked every 50 ms); rejects if the tail has exited. */
function until<T>(test: () => T | undefined, what: string, exited = () => tailExited): Promise<T> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const v = test();
      if (v !== undefined) resolve(v);
      else if (exited()) reject(new Error(`the tail exited before ${what}`));
      else setTimeout(check, 50);
    };
    check();
  });
}

const seen = (out: () => string, pattern: RegExp, exited?: () => boolean) =>
  until(() => (pattern.test(out()) ? true : undefined), String(pattern), exited);

/** Resolves once the tail has printed `n` lines on stdout. */
const lines = (out: () => string, n: number, exited?: () => boolean) =>
  until(
    () => {
      const all = out().trim().split('\n').filter(Boolean);
      return all.length >= n ? all : undefined;
    },
    `${n} lines`,
    exited,
  );

/** `hookline events tail` with `args`, its output as it comes. */
function tail(args: readonly string[], url: string) {
  const child = start(['events', 'tail', '--json', ...args], { HOOKLINE_URL: url });
  tails.push(child);
  let stdout = '';
  let stderr = '';
  let exited = false;
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  child.once('exit', () => {
    exited = true;
  });
  return {
    child,
    done: finished(child),
    out: () => stdout,
    err: () => stderr,
    exited: () => exited,
    ids: () =>
      stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { id: number }).id),
  };
}

const serverEnv = () => ({
  DATABASE_URL: db.url,
  HOOKLINE_LOG_LEVEL: 'warn',
  HOOKLINE_PAYMENTS_SECRET: PAYMENTS_SECRET,
});

it.runIf(hasPg)('follows across a restart of the server, without a gap or a repeat', async () => {
  const port = await freePort();
  const env = serverEnv();
  server = await startHookline(dir, env, { port });
  await server.healthy();
  const url = server.url;

  const tail = start(['events', 'tail', '--json', '--type', 'push'], { HOOKLINE_URL: url });
  tails.push(tail);
  let stdout = '';
  let stderr = '';
  tail.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  tail.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const done = finished(tail);
  tail.once('exit', () => {
    tailExited = true;
  });
  await seen(() => stderr, /Following http:\/\/127\.0\.0\.1:\d+\/events/);

  const pushed: number[] = [];
  pushed.push(await deliver(url, 'push'));
  await deliver(url, 'issues'); // filtered out by --type push
  pushed.push(await deliver(url, 'push'));
  await lines(() => stdout, 2);

  server.kill('SIGTERM');
  expect((await server.exited).code).toBe(0);
  await seen(() => stderr, /connection to .* lost/);

  server = await startHookline(dir, env, { port });
  await server.healthy();
  // Some of these may land before the tail is back: it must get them by its Last-Event-ID.
  for (let i = 0; i < 3; i++) {
    pushed.push(await deliver(url, 'push'));
    await deliver(url, 'issues');
  }
  const shown = await lines(() => stdout, 5);
  await seen(() => stderr, /reconnected to .* resuming after position/);
  // One more after the reconnect, to see that nothing repeats behind the last line.
  pushed.push(await deliver(url, 'push'));
  await lines(() => stdout, 6);
  tail.kill('SIGINT');
  const run = await done;
  expect(run.code, stderr).toBe(0);

  const ids = stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { id: number; event_type: string; provider: string });
  expect(ids.map((e) => e.id)).toEqual(pushed);
  expect(new Set(ids.map((e) => e.event_type))).toEqual(new Set(['push']));
  expect(shown.length).toBeGreaterThanOrEqual(5);
  expect(stderr).not.toMatch(/could not replay/);
});

it.runIf(hasPg)(
  '--provider shows one provider, with --type one type of it; a server never reached is "cannot reach"',
  async () => {
    if (server && server.child.exitCode === null) {
      server.kill('SIGTERM');
      await server.exited;
    }
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    // The tails start before the server: nothing was lost, it is not there yet.
    const payments = tail(['--provider', 'payments'], url);
    const failed = tail(['--provider', 'payments', '--type', 'charge.failed'], url);
    const codehost = tail(['--provider', 'codehost'], url);
    for (const t of [payments, failed, codehost]) {
      await seen(
        t.err,
        /\(cannot reach http:\/\/127\.0\.0\.1:\d+\/events: .*; trying again until it answers/,
        t.exited,
      );
      expect(t.err()).toContain(`cannot reach ${url}/events: fetch failed: connect ECONNREFUSED`);
    }

    server = await startHookline(dir, serverEnv(), { port });
    await server.healthy();
    for (const t of [payments, failed, codehost])
      await seen(t.err, /Following http:\S+\/events; Ctrl-C/, t.exited);

    const push = await deliver(url, 'push');
    const succeeded = await deliverPayment(url, 'charge.succeeded');
    const issues = await deliver(url, 'issues');
    const failure = await deliverPayment(url, 'charge.failed');
    await lines(payments.out, 2, payments.exited);
    await lines(failed.out, 1, failed.exited);
    await lines(codehost.out, 2, codehost.exited);
    for (const t of [payments, failed, codehost]) {
      t.child.kill('SIGINT');
      const run = await t.done;
      expect(run.code, t.err()).toBe(0);
      expect(t.err()).not.toMatch(/lost|reconnected/);
    }
    expect(payments.ids()).toEqual([succeeded, failure]);
    expect(failed.ids()).toEqual([failure]);
    expect(codehost.ids()).toEqual([push, issues]);
  },
);

it.runIf(hasPg)(
  'after more than the replay bound came while it was away, names the command that lists what it missed',
  async () => {
    if (server && server.child.exitCode === null) {
      server.kill('SIGTERM');
      await server.exited;
    }
    const port = await freePort();
    server = await startHookline(dir, serverEnv(), { port });
    await server.healthy();
    const url = server.url;
    const t = tail(['--type', 'push'], url);
    await seen(t.err, /Following http:\S+\/events; Ctrl-C/, t.exited);
    const last = await deliver(url, 'push');
    await lines(t.out, 1, t.exited);

    server.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);
    await seen(t.err, /connection to .* lost/, t.exited);
    // Meanwhile the same service answers on another port, which the tail does not know: more
    // deliveries than the stream replays after a reconnect.
    const other = await startHookline(dir, serverEnv());
    const missed: number[] = [];
    try {
      await other.healthy();
      for (let i = 0; i < DEFAULT_REPLAY_BOUND + 10; i += 16) {
        missed.push(...(await Promise.all(Array.from({ length: 16 }, () => deliver(other.url, 'push')))));
      }
    } finally {
      other.kill('SIGTERM');
      await other.exited;
    }
    server = await startHookline(dir, serverEnv(), { port });
    await server.healthy();
    await seen(t.err, /could not replay/, t.exited);
    expect(Math.min(...missed)).toBe(last + 1);
    expect(t.err()).toContain(
      `after #${last} is not shown here; \`hookline events list --since ${last + 1} --type push\` lists it)`,
    );
    // Live again from the head.
    const after = await deliver(url, 'push');
    await lines(t.out, 2, t.exited);
    t.child.kill('SIGINT');
    const run = await t.done;
    expect(run.code, t.err()).toBe(0);
    expect(t.ids()).toEqual([last, after]);
  },
  120_000,
);
