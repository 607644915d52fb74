import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuleEngine, type FaultReason, type RuleEngine } from '../../rules-sandbox/index.ts';
import { delivery, healthyRule, rule } from './support.ts';

// The escape and exhaustion matrix (issue 7, point 8). Each case must end `faulted` with the limit
// it actually hit, and a plain rule must evaluate correctly right after, in the same engine.
//
// Each limit is tested on an engine where it is the only one that can bind, so which limit trips
// first never depends on how busy the machine is: the deadline on an engine with an ample CPU
// budget, the CPU budget and memory on engines with an ample deadline.
const engines: Record<'deadline' | 'cpu' | 'memory', RuleEngine> = {} as never;

beforeAll(async () => {
  engines.deadline = await createRuleEngine({ deadlineMs: 250, cpuBudgetMs: 10_000 });
  // 150 ms: under load isolate.cpuTime runs close to wall time, and a fresh isolate's first copy costs some.
  engines.cpu = await createRuleEngine({ deadlineMs: 10_000, cpuBudgetMs: 150 });
  engines.memory = await createRuleEngine({ deadlineMs: 10_000, cpuBudgetMs: 10_000, memoryLimitMb: 16 });
});
afterAll(async () => {
  await Promise.all(Object.values(engines).map((e) => e.close()));
});

async function expectFault(
  engine: RuleEngine,
  source: string,
  reason: FaultReason,
  message?: RegExp,
  options: { followed?: boolean } = {},
) {
  // `followed`: a deciding rule comes after the hostile one, so the fault must name the rule that
  // was running, not the list's last.
  const list = [rule("() => 'continue'", 'before'), rule(source, 'hostile')];
  if (options.followed) list.push(rule("() => ({ route: 'after' })", 'after'));
  const outcome = await engine.evaluate(list, delivery());
  expect(outcome).toMatchObject({ kind: 'faulted', reason, rule: { id: 'hostile', index: 1 } });
  if (message) expect(outcome.kind === 'faulted' && outcome.message).toMatch(message);
  expect(engine.health()).toBe('ok');
  expect(await engine.evaluate([healthyRule], delivery())).toEqual({
    kind: 'routed',
    queue: 'ok',
    rule: { id: 'healthy', index: 0 },
  });
  return outcome;
}

describe('deadline (wall clock, enforced from outside the isolate)', () => {
  it('stops while(1){}', async () => {
    await expectFault(engines.deadline, '(d) => { while (1) {} }', 'timeout', /250 ms deadline/);
  });

  it('stops an endless loop inside a promise callback', async () => {
    await expectFault(
      engines.deadline,
      "(d) => { Promise.resolve().then(() => { while (1) {} }); return 'continue'; }",
      'timeout',
    );
  });

  it('stops an endless loop in an async rule before its promise could be refused', async () => {
    await expectFault(engines.deadline, 'async (d) => { await null; for (;;) {} }', 'timeout');
  });
});

describe('CPU budget (isolate.cpuTime)', () => {
  it('stops a busy loop once it has used its budget', async () => {
    await expectFault(engines.cpu, '(d) => { for (;;) {} }', 'cpu', /CPU budget of 150 ms/);
  });
});

describe('memory limit (16 MB)', () => {
  it('stops new Array(1e9).fill(0), replacing the sandbox process whose thread cannot be stopped', async () => {
    const before = await engines.memory.stats();
    await expectFault(engines.memory, '(d) => { new Array(1e9).fill(0); }', 'memory', /16 MB memory limit/);
    const after = await engines.memory.stats();
    // V8 fills a dictionary-mode array in a native loop that ignores termination: the isolate is
    // disposed but its thread keeps spinning, so the host kills that process and starts another.
    expect(after.processStarts).toBeGreaterThan(before.processStarts);
    expect(after.pid).not.toBe(before.pid);
  });

  it('stops a 100 MB string', async () => {
    await expectFault(
      engines.memory,
      "(d) => { const s = 'x'.repeat(100 * 1024 * 1024); return { route: s.slice(-1) === 'x' ? 'big' : 'small' }; }",
      'memory',
    );
  });

  it('stops an array that grows without end', async () => {
    await expectFault(engines.memory, '(d) => { const a = []; for (;;) a.push({ n: a.length }); }', 'memory');
  });

  it('counts an ArrayBuffer the isolate cannot allocate as memory', async () => {
    await expectFault(
      engines.memory,
      "(d) => { new ArrayBuffer(1024 * 1024 * 1024); return 'continue'; }",
      'memory',
    );
  });
});

describe('escapes and errors', () => {
  it('this.constructor.constructor("return process")() does not reach the host', async () => {
    await expectFault(engines.deadline, "(d) => this.constructor.constructor('return process')()", 'threw');
    // The same walk from the global object, where `this` is not undefined, finds no process either.
    await expectFault(
      engines.deadline,
      "(d) => globalThis.constructor.constructor('return process')().exit(1)",
      'threw',
      /process is not defined/,
    );
    // A sloppy-mode Function reaches the context's global, which has no process on it.
    const probe = rule("(d) => ({ route: typeof Function('return this')().process })");
    expect(await engines.deadline.evaluate([probe], delivery())).toMatchObject({
      kind: 'routed',
      queue: 'undefined',
    });
  });

  it('reports a thrown non-Error', async () => {
    await expectFault(engines.deadline, '(d) => { throw 42; }', 'threw', /non-Error value \(number\): 42/);
    await expectFault(
      engines.deadline,
      "(d) => { throw { toString() { return 'sneaky'; } }; }",
      'threw',
      /\(object\)/,
    );
  });

  it('faults a rule that no longer compiles', async () => {
    // As an upgrade might leave a stored rule: valid once, not now (here: a syntax error).
    await expectFault(engines.deadline, '(d) => d.payload?.[', 'compile', /SyntaxError/);
  });
});

// The list runs in one call into the isolate; a fault must still name the rule that caused it when
// rules follow it in the list.
describe('a fault in the middle of a list', () => {
  const followed = { followed: true };

  it('names the rule the deadline stopped', async () => {
    await expectFault(engines.deadline, '(d) => { while (1) {} }', 'timeout', /250 ms deadline/, followed);
  });

  it('names the rule the CPU budget stopped', async () => {
    await expectFault(engines.cpu, '(d) => { for (;;) {} }', 'cpu', /CPU budget of 150 ms/, followed);
  });

  it('names the rule that left the heap over its limit, not the one that decided after it', async () => {
    await expectFault(
      engines.memory,
      "(d) => { const s = 'x'.repeat(100 * 1024 * 1024); return s.slice(-1) === 'x' ? 'continue' : 'continue'; }",
      'memory',
      /16 MB memory limit/,
      followed,
    );
  });

  it('names the rule that threw', async () => {
    await expectFault(engines.deadline, "(d) => { throw new Error('mid'); }", 'threw', /mid/, followed);
  });
});

describe('a delivery the isolate cannot hold', () => {
  it('faults on memory naming no rule, and the next evaluation runs', async () => {
    const huge = delivery({ payload: Array.from({ length: 300_000 }, (_, i) => ({ i })) as never });
    const outcome = await engines.memory.evaluate(
      [rule("() => 'continue'", 'first'), rule("() => ({ route: 'ok' })", 'second')],
      huge,
    );
    expect(outcome).toMatchObject({ kind: 'faulted', reason: 'memory', rule: null });
    expect(outcome.kind === 'faulted' && outcome.message).toMatch(/could not be copied into the sandbox/);
    expect(await engines.memory.evaluate([healthyRule], delivery())).toMatchObject({ kind: 'routed' });
  });
});
