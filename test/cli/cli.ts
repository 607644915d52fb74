import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/hookline.mjs', import.meta.url));

export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * The real `hookline` binary on this Node (24), as a user runs it. Asynchronous: the server
 * under test may live in this very process and must keep answering while the CLI waits.
 */
export function hookline(args: readonly string[], env: Record<string, string>, input?: string): Promise<Run> {
  const child = start(args, env);
  if (input !== undefined) child.stdin?.end(input);
  else child.stdin?.end();
  return finished(child);
}

export function start(args: readonly string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: env.HOME ?? process.env.HOME ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

export function finished(child: ChildProcess): Promise<Run> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve) => {
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Resolves with the first match of `pattern` in what the child writes to the stream. */
export function waitForOutput(
  child: ChildProcess,
  stream: 'stdout' | 'stderr',
  pattern: RegExp,
): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const source = child[stream];
    if (!source) return reject(new Error(`no ${stream}`));
    const onData = (d: Buffer) => {
      seen += d.toString();
      const m = seen.match(pattern);
      if (m) {
        source.off('data', onData);
        resolve(m);
      }
    };
    source.on('data', onData);
    child.once('close', () => reject(new Error(`exited before printing ${pattern}: ${seen}`)));
  });
}
