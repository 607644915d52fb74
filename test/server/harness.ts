import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { openEmbedded } from '../../src/db/open.ts';
import type { RecordedEvent } from '../../src/eventstore/port.ts';
import { StreamNotFoundError } from '../../src/eventstore/port.ts';
import { createSqlEventStore } from '../../src/eventstore/sql/store.ts';
import { codehostSignature } from '../support/senders.ts';

/**
 * Runs the real `hookline` binary the way `npm start` does (node bin/hookline.mjs serve), on a free
 * port and a data directory of the test's own, and talks to it over real sockets.
 */

export const BIN = fileURLToPath(new URL('../../bin/hookline.mjs', import.meta.url));
export const CODEHOST_SECRET = 'e2e-codehost-secret';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly port: number;
  readonly url: string;
  /** Everything the process wrote so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Polls /healthz until it answers 200; rejects if the process exits first. */
  healthy(): Promise<Record<string, unknown>>;
  kill(signal: NodeJS.Signals): void;
}

export async function startHookline(
  dataDir: string,
  env: Record<string, string> = {},
  options: { readonly port?: number } = {},
): Promise<ServerProcess> {
  const port = options.port ?? (await freePort());
  const child = spawn(process.execPath, [BIN, 'serve'], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      HOOKLINE_DATA_DIR: dataDir,
      HOOKLINE_PORT: String(port),
      HOOKLINE_LOG_LEVEL: 'warn',
      HOOKLINE_CODEHOST_SECRET: CODEHOST_SECRET,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  let done = false;
  void exited.then(() => {
    done = true;
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    child,
    pid: child.pid!,
    port,
    url,
    stdout: () => out,
    stderr: () => err,
    exited,
    kill: (signal) => {
      child.kill(signal);
    },
    healthy: async () => {
      // Bounded by the test timeout, not by a wall-clock assertion: start-up may be slow on a loaded machine.
      for (;;) {
        if (done) throw new Error(`hookline exited before it was healthy:\n${err}\n${out}`);
        try {
          const res = await fetch(`${url}/healthz`);
          if (res.status === 200) return (await res.json()) as Record<string, unknown>;
        } catch {
          // not listening yet
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}

/** A signed codehost delivery (spec 4.1, 5): body and headers, signed as GitHub's code signs. */
export async function signedDelivery(
  body: string,
): Promise<{ body: string; headers: Record<string, string> }> {
  const signature = await codehostSignature(CODEHOST_SECRET, body);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-hub-signature-256': signature,
      'x-codehost-event': 'push',
      'x-codehost-delivery': randomUUID(),
    },
  };
}

export async function postDelivery(
  url: string,
  body: string,
): Promise<{ status: number; ack: { id: number } }> {
  const d = await signedDelivery(body);
  const res = await fetch(`${url}/webhooks/codehost`, { method: 'POST', headers: d.headers, body: d.body });
  return { status: res.status, ack: (await res.json()) as { id: number } };
}

/** Reads the `deliveries` stream straight from a stopped server's data directory. */
export async function readDeliveries(dataDir: string): Promise<RecordedEvent[]> {
  const sql = await openEmbedded(dataDir);
  try {
    const store = await createSqlEventStore(sql);
    const events: RecordedEvent[] = [];
    try {
      for await (const e of store.readStream('deliveries')) events.push(e);
    } catch (err) {
      if (!(err instanceof StreamNotFoundError)) throw err;
    }
    await store.close();
    return events;
  } finally {
    await sql.close();
  }
}
