import { type ChildProcess, spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { createRuntime } from '../../src/runtime.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';
import { BIN, freePort } from './harness.ts';

/** Logs a person can read (issue 15, point 8). */
const hasPg = await postgresAvailable();

/**
 * `hookline serve` (the real binary) until it logs that it listens, then stopped; what it wrote.
 * `tty`: under `script`, so standard output is a terminal, as in `npm start` from a shell.
 */
async function serveOutput(env: Record<string, string>, tty: boolean): Promise<string> {
  const port = await freePort();
  const vars = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    HOOKLINE_PORT: String(port),
    ...env,
  };
  const child: ChildProcess = tty
    ? spawn(
        'script',
        ['-qfec', `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} serve`, '/dev/null'],
        {
          env: vars,
          stdio: ['pipe', 'pipe', 'pipe'],
        },
      )
    : spawn(process.execPath, [BIN, 'serve'], { env: vars, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  for (;;) {
    if (/hookline listening/.test(out)) break;
    if (child.exitCode !== null) throw new Error(`serve exited: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  await fetch(`http://127.0.0.1:${port}/healthz`);
  await new Promise((r) => setTimeout(r, 200));
  child.kill('SIGTERM');
  await exited;
  return out;
}

let db: TestDatabase;
beforeAll(async () => {
  if (hasPg) db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe.runIf(hasPg)('the log format of hookline serve', () => {
  it('on a terminal: one readable line per entry, a request in words', async () => {
    const out = await serveOutput({ DATABASE_URL: db.url }, true);
    const plain = out.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '');
    expect(plain).toMatch(
      /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: hookline listening \{"url":"http:\/\/127\.0\.0\.1:\d+","mode":"server"\}/m,
    );
    expect(plain).toMatch(
      /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: request completed: GET \/healthz 200 in \d+\.\d ms/m,
    );
    expect(plain).not.toContain('{"level"');
  });

  it('JSON lines when standard output is not a terminal, and with HOOKLINE_LOG_FORMAT=json on one', async () => {
    for (const [env, tty] of [
      [{ DATABASE_URL: db.url }, false],
      [{ DATABASE_URL: db.url, HOOKLINE_LOG_FORMAT: 'json' }, true],
    ] as const) {
      const out = await serveOutput(env, tty);
      const listening = out.split(/\r?\n/).find((l) => l.includes('hookline listening'));
      expect(JSON.parse(listening ?? '')).toMatchObject({
        level: 30,
        msg: 'hookline listening',
        mode: 'server',
      });
    }
  });
});

describe.runIf(hasPg)('request log lines', () => {
  /** The app over PostgreSQL, logging JSON lines at `level` into an array. */
  async function logged(level: 'info' | 'debug'): Promise<Record<string, unknown>[]> {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split('\n'))
          if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    });
    const config = loadConfig({ HOOKLINE_PORT: '0', HOOKLINE_LOG_LEVEL: level, DATABASE_URL: db.url });
    const runtime = await createRuntime(config, { logger: createLogger(config, sink) });
    const app = await buildApp(runtime);
    try {
      const page = await app.inject({ url: '/' });
      const css = /href="(\/static\/app\.css\?v=[^"]+)"/.exec(page.body)?.[1];
      expect(css).toBeDefined();
      expect((await app.inject({ url: css! })).statusCode).toBe(200);
    } finally {
      await app.close();
      await runtime.close();
    }
    return lines.filter((l) => l.msg === 'request completed' || l.msg === 'incoming request');
  }

  it('at info: one line per page request with method, URL and status; static files not at all', async () => {
    const lines = await logged('info');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: 'request completed',
      req: { method: 'GET', url: '/' },
      res: { statusCode: 200 },
    });
  });

  it('at debug: the static file requests too, and the incoming lines', async () => {
    const lines = await logged('debug');
    const staticLines = lines.filter((l) =>
      String((l.req as { url?: string } | undefined)?.url).startsWith('/static/'),
    );
    expect(staticLines.map((l) => [l.level, l.msg])).toEqual([
      [20, 'incoming request'],
      [20, 'request completed'],
    ]);
  });
});
