// The sandbox process. The rule engine forks it (rules-sandbox/engine.ts) so that an isolate that
// aborts, or a native loop that ignores termination, costs this process and never the service.
import type { HostMessage, SandboxLimits, SandboxMessage } from './protocol.ts';

const send = (message: SandboxMessage): Promise<void> =>
  new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    process.send(message, undefined, undefined, () => resolve());
  });

async function main(): Promise<void> {
  // The host going away (or being killed) ends the sandbox with it.
  process.on('disconnect', () => process.exit(0));
  const limits = JSON.parse(process.argv[2] ?? '{}') as SandboxLimits;
  let runner: import('./isolate-runner.ts').IsolateRunner;
  try {
    const ivm = (await import('isolated-vm')).default;
    const { createIsolateRunner } = await import('./isolate-runner.ts');
    runner = createIsolateRunner(ivm, limits);
    await runner.warmUp();
  } catch (error) {
    await send({ type: 'fatal', message: error instanceof Error ? error.message : String(error) });
    process.exit(1);
  }
  // The host sends one request at a time; chaining keeps that true even if it did not.
  let queue = Promise.resolve();
  process.on('message', (message: HostMessage) => {
    queue = queue
      .then(() => handle(runner, message))
      .catch(async (error: unknown) => {
        await send({ type: 'fatal', message: error instanceof Error ? error.message : String(error) });
        process.exit(1);
      });
  });
  await send({ type: 'ready', pid: process.pid });
}

async function handle(
  runner: import('./isolate-runner.ts').IsolateRunner,
  message: HostMessage,
): Promise<void> {
  switch (message.type) {
    case 'evaluate': {
      const { outcome, recycle } = await runner.evaluate(message.rules, message.delivery);
      await send({ type: 'evaluated', id: message.id, outcome, recycle });
      return;
    }
    case 'compile': {
      const { problems, recycle } = await runner.compileCheck(message.rules);
      await send({ type: 'compiled', id: message.id, problems, recycle });
      return;
    }
    case 'stats':
      await send({ type: 'stats', id: message.id, counters: runner.counters() });
      return;
    default: {
      const never: never = message;
      throw new Error(`unknown message ${JSON.stringify(never)}`);
    }
  }
}

void main();
