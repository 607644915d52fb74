import { describe, expect, it } from 'vitest';
import { createFollowUps } from '../src/follow-up.ts';
import { createLogger } from '../src/logger.ts';

type Line = { level: number; msg: string; [field: string]: unknown };

function capture() {
  const lines: Line[] = [];
  const logger = createLogger(
    { logLevel: 'info' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Line) },
  );
  return { lines, logger };
}

const WARN = 40;
const INFO = 30;
const ERROR = 50;

describe('follow-ups of a durable delivery: awaited up to a bound, then logged and left to finish', () => {
  it('work that ends within the bound is answered with its value, and nothing is logged', async () => {
    const { lines, logger } = capture();
    const followUps = createFollowUps({ logger, boundMs: 60_000 });
    const r = await followUps.run({ event_id: 1 }, async (step) => {
      step('the todo td_1');
      return 'td_1';
    });
    expect(r).toEqual({ done: true, value: 'td_1' });
    expect(lines).toEqual([]);
  });

  it('a failure within the bound is the caller’s, as before', async () => {
    const { lines, logger } = capture();
    const followUps = createFollowUps({ logger, boundMs: 60_000 });
    await expect(
      followUps.run({ event_id: 2 }, async () => {
        throw new Error('append refused');
      }),
    ).rejects.toThrow('append refused');
    expect(lines).toEqual([]);
  });

  it('past the bound: answered without it, a warning names the step it was on, and its late end is logged', async () => {
    const { lines, logger } = capture();
    const followUps = createFollowUps({ logger, boundMs: 10 });
    const doorbell = Promise.withResolvers<void>();
    let finished = false;
    const r = await followUps.run({ event_id: 3, webhook: 'wh_x' }, async (step) => {
      step('the todo td_3');
      step('the doorbell of endpoint ep_x');
      await doorbell.promise;
      finished = true;
      return 'td_3';
    });
    expect(r).toEqual({ done: false, awaited: 'the doorbell of endpoint ep_x' });
    expect(finished).toBe(false);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: WARN,
      awaited: 'the doorbell of endpoint ep_x',
      boundMs: 10,
      event_id: 3,
      webhook: 'wh_x',
    });
    expect(lines[0]!.msg).toContain('the doorbell of endpoint ep_x');

    // Shutdown waits for it: idle() resolves only once the late work has ended.
    let idle = false;
    const waiting = followUps.idle().then(() => {
      idle = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(idle).toBe(false);
    doorbell.resolve();
    await waiting;
    expect(finished).toBe(true);
    expect(lines[1]).toMatchObject({
      level: INFO,
      event_id: 3,
      msg: 'late follow-up of a delivery finished',
    });
  });

  it('a failure after the bound is logged with the step it failed at, never an unhandled rejection', async () => {
    const { lines, logger } = capture();
    const followUps = createFollowUps({ logger, boundMs: 10 });
    const todo = Promise.withResolvers<void>();
    const r = await followUps.run({ event_id: 4 }, async (step) => {
      step('the todo td_4');
      await todo.promise;
    });
    expect(r).toEqual({ done: false, awaited: 'the todo td_4' });
    todo.reject(new Error('the event log cannot be written right now'));
    await followUps.idle();
    expect(lines.map((l) => l.level)).toEqual([WARN, ERROR]);
    expect(lines[1]).toMatchObject({
      awaited: 'the todo td_4',
      event_id: 4,
      err: expect.objectContaining({ message: 'the event log cannot be written right now' }),
    });
  });
});
