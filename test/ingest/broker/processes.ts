import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { waitFor } from './support.ts';

const bin = fileURLToPath(new URL('../../../bin/hookline.mjs', import.meta.url));

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface Child {
  readonly proc: ChildProcess;
  readonly exited: Promise<number | null>;
  /** What it wrote to stderr and stdout, for a failing test's message. */
  output(): string;
}

function track(proc: ChildProcess): Child {
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => {
    out = (out + d.toString()).slice(-20_000);
  });
  proc.stderr?.on('data', (d: Buffer) => {
    out = (out + d.toString()).slice(-20_000);
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { proc, exited, output: () => out };
}

export interface Service extends Child {
  readonly url: string;
}

/** `hookline serve` as a child process (Node 24, the repo's bin), resolved once it listens. */
export async function startService(env: Record<string, string>): Promise<Service> {
  const proc = spawn(process.execPath, [bin, 'serve'], {
    env: { PATH: process.env.PATH ?? '', HOOKLINE_HOST: '127.0.0.1', HOOKLINE_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const child = track(proc);
  const listening = new Promise<string>((resolve, reject) => {
    let buffered = '';
    const onData = (d: Buffer) => {
      buffered += d.toString();
      for (const line of buffered.split('\n')) {
        if (!line.includes('hookline listening')) continue;
        try {
          const parsed = JSON.parse(line) as { url?: string };
          if (parsed.url) {
            proc.stdout?.off('data', onData);
            resolve(parsed.url);
            return;
          }
        } catch {
          // a partial line: wait for the rest
        }
      }
    };
    proc.stdout?.on('data', onData);
    child.exited.then((code) =>
      reject(new Error(`hookline exited (${code}) before listening:\n${child.output()}`)),
    );
    setTimeout(
      () => reject(new Error(`hookline did not listen within 60 s:\n${child.output()}`)),
      60_000,
    ).unref();
  });
  try {
    return { ...child, url: await listening };
  } catch (err) {
    // Never leave a half-started service behind (it would keep consuming the test's stream).
    proc.kill('SIGKILL');
    await child.exited;
    throw err;
  }
}

/** SIGTERM and wait for a clean exit (the embedded data directory's lock is released). */
export async function stopService(service: Child): Promise<void> {
  if (service.proc.exitCode !== null || service.proc.signalCode !== null) return;
  service.proc.kill('SIGTERM');
  const code = await service.exited;
  if (code !== 0) throw new Error(`hookline exited with ${code}:\n${service.output()}`);
}

export async function killHard(child: Child): Promise<void> {
  if (child.proc.exitCode !== null || child.proc.signalCode !== null) return;
  child.proc.kill('SIGKILL');
  await child.exited;
}

/**
 * A redis-server of the test's own, persisting to `dir` with every write fsynced, so a
 * SIGKILL loses nothing that was acknowledged and a restart on the same port finds it all.
 */
export async function startRedis(port: number, dir: string): Promise<Child> {
  const proc = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--save',
      '',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const child = track(proc);
  const probe = new Redis(port, '127.0.0.1', {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on('error', () => {});
  try {
    await waitFor(
      `redis-server on ${port}`,
      async () => {
        if (proc.exitCode !== null) throw new Error(`redis-server exited:\n${child.output()}`);
        if (probe.status !== 'ready') await probe.connect().catch(() => undefined);
        return (await probe.ping().catch(() => '')) === 'PONG';
      },
      { timeoutMs: 15_000, intervalMs: 100 },
    );
  } finally {
    probe.disconnect();
  }
  return child;
}
