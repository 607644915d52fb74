import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort, type ServerProcess, signedDelivery, startHookline } from '../server/harness.ts';
import { freshDataDir, removeDataDir } from '../support/embedded.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';
import { finished, start } from './cli.ts';

/**
 * `hookline events tail` (the real binary) against `hookline serve` (the real binary) that is
 * stopped and started again: the tail stays, says so on stderr, and shows every delivery once.
 */
const hasPg = await postgresAvailable();
let db: TestDatabase;
let dir: string;
let server: ServerProcess | undefined;

beforeAll(async () => {
  if (!hasPg) return;
  db = await createTestDatabase();
  dir = await freshDataDir();
});
afterAll(async () => {
  if (server && server.child.exitCode === null) {
    server.kill('SIGTERM');
    await server.exited;
  }
  await db?.drop();
  if (dir) await removeDataDir(dir);
});

async function deliver(url: string, type: string): Promise<number> {
  const d = signedDelivery(JSON.stringify({ type, at: Date.now() }));
  const res = await fetch(`${url}/webhooks/codehost`, {
    method: 'POST',
    headers: { ...d.headers, 'x-codehost-event': type },
    body: d.body,
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: number }).id;
}

let tailExited = false;

/** Resolves once `test()` gives a value (checked every 50 ms); rejects if the tail has exited. */
function until<T>(test: () => T | undefined, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const v = test();
      if (v !== undefined) resolve(v);
      else if (tailExited) reject(new Error(`the tail exited before ${what}`));
      else setTimeout(check, 50);
    };
    check();
  });
}

const seen = (out: () => string, pattern: RegExp) =>
  until(() => (pattern.test(out()) ? true : undefined), String(pattern));

/** Resolves once the tail has printed `n` lines on stdout. */
const lines = (out: () => string, n: number) =>
  until(() => {
    const all = out().trim().split('\n').filter(Boolean);
    return all.length >= n ? all : undefined;
  }, `${n} lines`);

it.runIf(hasPg)('follows across a restart of the server, without a gap or a repeat', async () => {
  const port = await freePort();
  const env = { DATABASE_URL: db.url, HOOKLINE_LOG_LEVEL: 'warn' };
  server = await startHookline(dir, env, { port });
  await server.healthy();
  const url = server.url;

  const tail = start(['events', 'tail', '--json', '--type', 'push'], { HOOKLINE_URL: url });
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
