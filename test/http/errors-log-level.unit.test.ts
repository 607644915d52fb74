import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { HooklineError } from '../../src/errors.ts';
import { errorsPlugin } from '../../src/http/errors-plugin.ts';

/** The log line each kind of failure leaves, read from the logger's own output. */
async function logOf(error: Error): Promise<{ status: number; lines: Record<string, unknown>[] }> {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  const app = Fastify({ logger: { level: 'info', stream } });
  await app.register(errorsPlugin);
  app.get('/fail', async () => {
    throw error;
  });
  const res = await app.inject({ method: 'GET', url: '/fail' });
  await app.close();
  return {
    status: res.statusCode,
    lines: lines.filter((l) => l.msg !== 'incoming request' && l.msg !== 'request completed'),
  };
}

describe('the level a failed request is logged at', () => {
  it('a replay target that did not answer is a warning with its reason, not an error with a stack', async () => {
    const { status, lines } = await logOf(
      new HooklineError('replay_failed', 'network: connect ECONNREFUSED'),
    );
    expect(status).toBe(502);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, msg: 'upstream failed', code: 'replay_failed' });
    expect(lines[0]!.detail).toBe('network: connect ECONNREFUSED');
    expect(lines[0]).not.toHaveProperty('err');
  });

  it('a fault of our own stays an error with its stack', async () => {
    const { status, lines } = await logOf(new Error('boom'));
    expect(status).toBe(500);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 50, msg: 'request failed' });
    expect((lines[0]!.err as { stack: string }).stack).toMatch(/boom/);
  });

  it('a refused request is information', async () => {
    const { status, lines } = await logOf(new HooklineError('not_found', 'nothing here'));
    expect(status).toBe(404);
    expect(lines[0]).toMatchObject({ level: 30, msg: 'request refused', code: 'not_found' });
  });
});
