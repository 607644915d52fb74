import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuleEngine, type RuleEngine } from '../../rules-sandbox/index.ts';
import { delivery, healthyRule, rule } from './support.ts';

// Rule semantics, action validation, compile caching and isolation between rules. These spawn the
// sandbox process, hence the int tier.
let engine: RuleEngine;
beforeAll(async () => {
  engine = await createRuleEngine({ deadlineMs: 1_000, cpuBudgetMs: 1_000 });
  expect(engine.health()).toBe('ok');
});
afterAll(async () => {
  await engine.close();
});

describe('actions', () => {
  it('routes, drops and holds, naming the deciding rule', async () => {
    const route = rule("(d) => ({ route: 'ci-builds' })", 'to-ci');
    expect(await engine.evaluate([route], delivery())).toEqual({
      kind: 'routed',
      queue: 'ci-builds',
      rule: { id: 'to-ci', index: 0 },
    });
    const drop = rule('() => ({ drop: true })', 'drop-all');
    expect(await engine.evaluate([drop], delivery())).toEqual({
      kind: 'dropped',
      rule: { id: 'drop-all', index: 0 },
    });
    const hold = rule('() => ({ quarantine: true })', 'hold');
    expect(await engine.evaluate([hold], delivery())).toEqual({
      kind: 'held',
      rule: { id: 'hold', index: 0 },
    });
  });

  it("walks the list in order: 'continue' and undefined pass on, the first decision wins", async () => {
    const rules = [
      rule("() => 'continue'", 'a'),
      rule('() => undefined', 'b'),
      rule('() => {}', 'c'),
      rule("(d) => (d.event_type === 'push' ? { route: 'pushes' } : 'continue')", 'd'),
      rule("() => ({ route: 'never-reached' })", 'e'),
    ];
    expect(await engine.evaluate(rules, delivery())).toEqual({
      kind: 'routed',
      queue: 'pushes',
      rule: { id: 'd', index: 3 },
    });
    expect(await engine.evaluate(rules, delivery({ event_type: 'issues' }))).toEqual({
      kind: 'routed',
      queue: 'never-reached',
      rule: { id: 'e', index: 4 },
    });
    expect(await engine.evaluate(rules.slice(0, 3), delivery())).toEqual({ kind: 'default' });
  });

  it('gives an empty list the default without touching the sandbox', async () => {
    expect(await engine.evaluate([], delivery())).toEqual({ kind: 'default' });
  });

  it('shows the rule every field of the delivery', async () => {
    const probe = rule(`(d) => {
      const ok = d.event_type === 'invoice.paid'
        && d.headers['x-request-id'] === 'abc'
        && d.payload.data.amount === 1250
        && d.provider === 'webhook:wh_1'
        && d.received_at === '2026-05-06T07:08:09.010Z';
      return { route: ok ? 'seen' : 'missed' };
    }`);
    const seen = await engine.evaluate(
      [probe],
      delivery({
        event_type: 'invoice.paid',
        headers: { 'x-request-id': 'abc' },
        payload: { data: { amount: 1250 } },
        provider: 'webhook:wh_1',
        received_at: '2026-05-06T07:08:09.010Z',
      }),
    );
    expect(seen).toMatchObject({ kind: 'routed', queue: 'seen' });
    const nullPayload = rule(
      "(d) => ({ route: d.payload === null && d.event_type === null ? 'empty' : 'full' })",
    );
    expect(await engine.evaluate([nullPayload], delivery({ payload: null, event_type: null }))).toMatchObject(
      {
        queue: 'empty',
      },
    );
  });
});

describe('strict action validation', () => {
  const invalid: [string, string][] = [
    ['null', '() => null'],
    ['an unknown string', "() => 'drop'"],
    ['a number', '() => 42'],
    ['the reserved queue', "() => ({ route: 'quarantine' })"],
    ['a queue name outside the pattern', "() => ({ route: 'Not A Queue' })"],
    ['a queue name over 64 characters', `() => ({ route: '${'q'.repeat(65)}' })`],
    ['an empty queue name', "() => ({ route: '' })"],
    ['a route that is not a string', '() => ({ route: 7 })'],
    ['an extra key', "() => ({ route: 'ok', reason: 'x' })"],
    ['an empty object', '() => ({})'],
    ['drop that is not exactly true', '() => ({ drop: 1 })'],
    ['quarantine that is not exactly true', "() => ({ quarantine: 'yes' })"],
    ['an unknown key', '() => ({ continue: true })'],
    ['an array', "() => ['route', 'ok']"],
    ['a promise (async rule)', "async () => ({ route: 'ok' })"],
    ['a getter', "() => ({ get route() { return 'ok'; } })"],
    ['a class instance', "() => new (class { constructor() { this.route = 'ok'; } })()"],
  ];
  it.each(invalid)('refuses %s as a fault', async (_name, source) => {
    const outcome = await engine.evaluate([rule(source, 'bad')], delivery());
    expect(outcome).toMatchObject({ kind: 'faulted', reason: 'invalid', rule: { id: 'bad', index: 0 } });
    expect(outcome.kind === 'faulted' && outcome.message).toMatch(/^invalid action: /);
    expect(await engine.evaluate([healthyRule], delivery())).toMatchObject({ kind: 'routed', queue: 'ok' });
  });

  it('accepts a null-prototype object and queue names at the edges of the pattern', async () => {
    const edge = rule(`() => Object.assign(Object.create(null), { route: '0${'_'.repeat(62)}-' })`);
    expect(await engine.evaluate([edge], delivery())).toMatchObject({
      kind: 'routed',
      queue: `0${'_'.repeat(62)}-`,
    });
  });
});

describe('compilation', () => {
  it('lists every rule that does not compile, and what is wrong with it', async () => {
    const problems = await engine.compileCheck([
      rule("() => ({ route: 'ok' })", 'fine'),
      rule('(d) => { return {', 'syntax'),
      rule('42', 'not-a-function'),
      rule('1); }); let leak = 1; ((function () { return (1', 'breakout'),
    ]);
    expect(problems.map((p) => p.rule)).toEqual([
      { id: 'syntax', index: 1 },
      { id: 'not-a-function', index: 2 },
      { id: 'breakout', index: 3 },
    ]);
    expect(problems[0]?.message).toMatch(/SyntaxError/);
    expect(problems[1]?.message).toMatch(/must evaluate to a function, got number/);
  });

  it('refuses structural problems before the sandbox: empty source, repeated id, oversize source', async () => {
    const problems = await engine.compileCheck([
      { id: 'x', source: '  ' },
      { id: 'x', source: '() => undefined' },
      { id: 'big', source: `() => '${'a'.repeat(9_000)}'` },
    ]);
    expect(problems.map((p) => p.message)).toEqual([
      'the rule source is empty',
      'rule id "x" appears twice in the list',
      'a rule source is at most 8192 characters',
    ]);
  });

  it('faults a list with a broken rule even when an earlier rule would decide', async () => {
    const outcome = await engine.evaluate(
      [rule("() => ({ route: 'ok' })", 'first'), rule('(d) => d.', 'broken')],
      delivery(),
    );
    expect(outcome).toMatchObject({ kind: 'faulted', reason: 'compile', rule: { id: 'broken', index: 1 } });
  });

  it('compiles each rule version once, keyed by its content', async () => {
    const source = `(d) => ({ route: 'cached-${Date.now()}' })`;
    const before = await engine.stats();
    for (let i = 0; i < 3; i += 1) await engine.evaluate([rule(source, `id-${i}`)], delivery());
    const after = await engine.stats();
    expect(after.compiles - before.compiles).toBe(1);
    expect(after.cacheHits - before.cacheHits).toBe(2);
    await engine.evaluate([rule(`${source} `)], delivery());
    expect((await engine.stats()).compiles - after.compiles).toBe(1);
  });
});

describe('isolation', () => {
  it('exposes nothing of the host or of isolated-vm on the global', async () => {
    const names = [
      'process',
      'require',
      'module',
      'global',
      'Buffer',
      'ivm',
      '_ivm',
      'console',
      'setTimeout',
      'fetch',
      'WebAssembly',
      'SharedArrayBuffer',
      'Atomics',
      'eval',
      'WeakRef',
    ];
    const probe = rule(`() => {
      const present = ${JSON.stringify(names)}.filter((n) => typeof globalThis[n] !== 'undefined');
      return { route: present.length === 0 ? 'clean' : 'leak-' + present.join('-').toLowerCase().replace(/[^a-z0-9-]/g, '') };
    }`);
    expect(await engine.evaluate([probe], delivery())).toMatchObject({ kind: 'routed', queue: 'clean' });
  });

  it('keeps no state between deliveries', async () => {
    const counter = rule("(() => { let n = 0; return () => ({ route: 'n' + (++n) }); })()");
    expect(await engine.evaluate([counter], delivery())).toMatchObject({ queue: 'n1' });
    expect(await engine.evaluate([counter], delivery())).toMatchObject({ queue: 'n1' });
  });

  it('hands rules a frozen delivery', async () => {
    const writer = rule("(d) => { d.payload.ref = 'x'; return 'continue'; }");
    const outcome = await engine.evaluate([writer], delivery());
    expect(outcome).toMatchObject({ kind: 'faulted', reason: 'threw' });
    expect(outcome.kind === 'faulted' && outcome.message).toMatch(/read only|read-only|not extensible/);
  });

  it('refuses prototype pollution, so one webhook cannot change what another rule sees', async () => {
    const polluter = rule("() => { Array.prototype.includes = () => true; return 'continue'; }");
    expect(await engine.evaluate([polluter], delivery())).toMatchObject({ kind: 'faulted', reason: 'threw' });
    const victim = rule("() => ({ route: [1, 2].includes(3) ? 'polluted' : 'clean' })");
    expect(await engine.evaluate([victim], delivery())).toMatchObject({ queue: 'clean' });
  });

  it('leaves no RegExp match state from one rule for the next', async () => {
    const reader = rule(
      "(d) => { /secret-(\\w+)/.exec('secret-' + d.event_type); return 'continue'; }",
      'reader',
    );
    const spy = rule(
      "() => ({ route: typeof RegExp.$1 === 'undefined' && typeof RegExp.lastMatch === 'undefined' ? 'blind' : 'saw' })",
      'spy',
    );
    expect(await engine.evaluate([reader, spy], delivery())).toMatchObject({ queue: 'blind' });
  });
});

describe('dry run', () => {
  it('lists the deliveries a list would fault on', async () => {
    const rules = [
      rule("(d) => ({ route: d.payload.repository.full_name.startsWith('acme/') ? 'acme' : 'other' })"),
    ];
    const deliveries = [
      delivery(),
      delivery({ payload: null }),
      delivery(),
      delivery({ payload: { repository: {} } }),
    ];
    const report = await engine.dryRun(rules, deliveries);
    expect(report.ok).toBe(false);
    expect(report.compile).toEqual([]);
    expect(report.faults.map((f) => [f.index, f.outcome.reason])).toEqual([
      [1, 'threw'],
      [3, 'threw'],
    ]);
    expect(report.outcomes.map((o) => o.kind)).toEqual(['routed', 'faulted', 'routed', 'faulted']);
  });

  it('passes a list that handles every delivery, and stops at compile problems', async () => {
    const good = [rule("(d) => ({ route: d.payload?.repository?.full_name ? 'acme' : 'other' })")];
    const report = await engine.dryRun(good, [delivery(), delivery({ payload: null })]);
    expect(report).toMatchObject({ ok: true, faults: [], compile: [] });
    const broken = await engine.dryRun([rule('(d) =>')], [delivery()]);
    expect(broken.ok).toBe(false);
    expect(broken.compile).toHaveLength(1);
    expect(broken.outcomes).toEqual([]);
  });
});
