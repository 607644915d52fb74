import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { freshDataDir, removeDataDir } from '../support/embedded.ts';
import { readDeliveries, type ServerProcess, signedDelivery, startHookline } from './harness.ts';

/** Resolves once connecting to the port is refused: the server has stopped accepting. */
async function refusesConnections(port: number): Promise<void> {
  for (;;) {
    const refused = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port });
      s.once('connect', () => {
        s.destroy();
        resolve(false);
      });
      s.once('error', () => resolve(true));
    });
    if (refused) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Collects what the server sends on a raw socket until `until` matches. */
function reader(socket: net.Socket) {
  let received = '';
  const waiters: Array<() => void> = [];
  socket.on('data', (d: Buffer) => {
    received += d.toString('latin1');
    for (const w of waiters.splice(0)) w();
  });
  socket.on('close', () => {
    for (const w of waiters.splice(0)) w();
  });
  return {
    text: () => received,
    until: async (pattern: RegExp): Promise<string> => {
      while (!pattern.test(received)) {
        if (socket.destroyed) throw new Error(`socket closed; received so far:\n${received}`);
        await new Promise<void>((r) => waiters.push(r));
      }
      return received;
    },
  };
}

describe('graceful shutdown', () => {
  let dataDir: string;
  let server: ServerProcess | undefined;

  beforeEach(async () => {
    dataDir = await freshDataDir();
  });
  afterEach(async () => {
    if (server && server.child.exitCode === null && server.child.signalCode === null) server.kill('SIGKILL');
    await server?.exited;
    await removeDataDir(dataDir);
  });

  it('on SIGTERM stops accepting, finishes the in-flight delivery, then exits 0 with it stored', async () => {
    server = await startHookline(dataDir);
    await server.healthy();

    const payload = JSON.stringify({ note: 'in flight during SIGTERM', pad: 'x'.repeat(2000) });
    const { headers } = await signedDelivery(payload);
    const bytes = Buffer.from(payload);
    const half = Math.floor(bytes.length / 2);

    const socket = net.connect({ host: '127.0.0.1', port: server.port });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('error', reject);
    });
    const replies = reader(socket);
    // `Expect: 100-continue` makes the server say when it has taken the request on: from then on
    // it is in flight, whatever the timing.
    const head = [
      'POST /webhooks/codehost HTTP/1.1',
      `Host: 127.0.0.1:${server.port}`,
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      `Content-Length: ${bytes.length}`,
      'Expect: 100-continue',
      '',
      '',
    ].join('\r\n');
    socket.write(head);
    await replies.until(/^HTTP\/1\.1 100 Continue\r\n\r\n/);
    socket.write(bytes.subarray(0, half));

    server.kill('SIGTERM');
    await refusesConnections(server.port);

    // The rest of the body arrives after the server stopped accepting; the request still completes.
    socket.write(bytes.subarray(half));
    const response = await replies.until(/\r\n\r\n[\s\S]*\}/);
    const finalHead = response.slice(response.indexOf('HTTP/1.1', 1));
    expect(finalHead).toMatch(/^HTTP\/1\.1 202 /);
    const ack = JSON.parse(finalHead.slice(finalHead.indexOf('\r\n\r\n') + 4)) as { id: number };
    expect(ack.id).toBeGreaterThan(0);

    // The client keeps its connection open, as keep-alive clients do; the server must still exit.
    const exit = await server.exited;
    socket.destroy();
    expect(exit, `${server.stdout()}\n${server.stderr()}`).toEqual({ code: 0, signal: null });

    const events = await readDeliveries(dataDir);
    const stored = events.find((e) => Number(e.revision) + 1 === ack.id);
    expect(stored && Buffer.from(stored.data).equals(bytes)).toBe(true);
  });
  it('on SIGTERM closes connections that have sent nothing yet, and exits 0 before its shutdown timeout', async () => {
    // Browsers open connections ahead of need; Node keeps one that has sent no request open until
    // headersTimeout (60 s), so the shutdown timeout would end the process with exit code 1.
    server = await startHookline(dataDir, { HOOKLINE_SHUTDOWN_TIMEOUT_MS: '5000' });
    await server.healthy();
    const spare = net.connect({ host: '127.0.0.1', port: server.port });
    await new Promise<void>((resolve, reject) => {
      spare.once('connect', () => resolve());
      spare.once('error', reject);
    });
    const closed = new Promise<void>((resolve) => spare.once('close', () => resolve()));
    spare.on('error', () => {});

    server.kill('SIGTERM');
    const exit = await server.exited;
    expect(exit, `${server.stdout()}\n${server.stderr()}`).toEqual({ code: 0, signal: null });
    await closed;
  });
});
