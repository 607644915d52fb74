import { readFileSync } from 'node:fs';
import type ivmModule from 'isolated-vm';
import { type Budget, createGuard, type Guarded } from './guard.ts';
import { clip, routeQueueProblem } from './limits.ts';
import type { SandboxCounters, SandboxLimits, WireRule } from './protocol.ts';
import type { CompileProblem, FaultedOutcome, FaultReason, Outcome, RuleDelivery, RuleRef } from './types.ts';

type Ivm = typeof ivmModule;

/** What the in-isolate control functions return (see in-isolate.js), copied out. */
type Step =
  | { t: 'ok' }
  | { t: 'continue' }
  | { t: 'route'; q: string }
  | { t: 'drop' }
  | { t: 'quarantine' }
  | { t: 'invalid'; m: string }
  | { t: 'compile'; m: string }
  | { t: 'threw'; m: string; mem: boolean };

/** What `evaluate` returns: the step of the rule at position `i` (the last one, when all continued). */
type ListStep = Step & { i: number };

interface Control {
  compile(hash: string, source: string): Step;
  check(hash: string): Step;
  forget(hash: string): void;
  setDelivery(delivery: RuleDelivery): void;
  run(hash: string, last: boolean): Step;
  share(buffer: SharedArrayBuffer): void;
  evaluate(hashes: readonly string[], delivery: RuleDelivery): ListStep;
}

type ControlRef<K extends keyof Control> = ivmModule.Reference<Control[K]>;

interface Live {
  readonly isolate: ivmModule.Isolate;
  readonly context: ivmModule.Context;
  readonly compile: ControlRef<'compile'>;
  readonly check: ControlRef<'check'>;
  readonly forget: ControlRef<'forget'>;
  readonly setDelivery: ControlRef<'setDelivery'>;
  readonly run: ControlRef<'run'>;
  readonly evaluate: ControlRef<'evaluate'>;
  /** Written by the isolate before each rule of `evaluate` runs: that rule's position (-1 before). */
  readonly position: Int32Array;
  /** Hashes compiled in this isolate, least recently used first. */
  readonly compiled: Map<string, true>;
  disposedByUs: boolean;
}

const BOOTSTRAP = readFileSync(new URL('./in-isolate.js', import.meta.url), 'utf8');

export interface IsolateRunner {
  evaluate(
    rules: readonly WireRule[],
    delivery: RuleDelivery,
  ): Promise<{ outcome: Outcome; recycle: boolean }>;
  compileCheck(rules: readonly WireRule[]): Promise<{ problems: CompileProblem[]; recycle: boolean }>;
  /** Creates the first isolate and runs a trivial rule through it; throws when that fails. */
  warmUp(): Promise<void>;
  counters(): SandboxCounters;
}

/** Runs in the sandbox process: one isolate at a time, replaced after any fault. */
export function createIsolateRunner(ivm: Ivm, limits: SandboxLimits): IsolateRunner {
  const counts = { isolatesCreated: 0, compiles: 0, cacheHits: 0, evaluations: 0, faults: 0 };
  const guard = createGuard(limits);
  let live: Live | null = null;
  let creating: Promise<Live> | null = null;

  async function create(): Promise<Live> {
    const isolate = new ivm.Isolate({ memoryLimit: limits.memoryLimitMb });
    try {
      const context = await isolate.createContext();
      const script = await isolate.compileScript(BOOTSTRAP, { filename: 'hookline:sandbox' });
      const control = (await script.run(context, {
        reference: true,
        timeout: 2_000,
      })) as ivmModule.Reference<Control>;
      script.release();
      const get = async <K extends keyof Control>(key: K) =>
        (await control.get(key, { reference: true })) as ControlRef<K>;
      const position = new Int32Array(new SharedArrayBuffer(4));
      const share = await get('share');
      await share.apply(undefined, [position.buffer], { arguments: { copy: true }, timeout: 2_000 });
      share.release();
      const made: Live = {
        isolate,
        context,
        compile: await get('compile'),
        check: await get('check'),
        forget: await get('forget'),
        setDelivery: await get('setDelivery'),
        run: await get('run'),
        evaluate: await get('evaluate'),
        position,
        compiled: new Map(),
        disposedByUs: false,
      };
      control.release();
      counts.isolatesCreated += 1;
      return made;
    } catch (error) {
      if (!isolate.isDisposed) isolate.dispose();
      throw error;
    }
  }

  async function current(): Promise<Live> {
    if (live && !live.isolate.isDisposed) return live;
    live = null;
    creating ??= create().finally(() => {
      creating = null;
    });
    live = await creating;
    return live;
  }

  /** Any fault ends the isolate; a fresh one is prepared at once unless the process is to be replaced. */
  function retire(target: Live, stuck: boolean): void {
    if (!target.isolate.isDisposed) {
      target.disposedByUs = true;
      target.isolate.dispose();
    }
    if (live === target) live = null;
    if (!stuck) void current().catch(() => undefined);
  }

  /** Compiles a rule version into the isolate once; later lists that hold it reuse it. */
  async function ensureCompiled(target: Live, budget: Budget, rule: WireRule): Promise<Guarded<Step>> {
    if (target.compiled.has(rule.hash)) {
      target.compiled.delete(rule.hash);
      target.compiled.set(rule.hash, true);
      counts.cacheHits += 1;
      return { ok: true, value: { t: 'ok' } };
    }
    const result = await guard.run(target, budget, (timeout) =>
      target.compile.apply(undefined, [rule.hash, rule.source], {
        arguments: { copy: true },
        result: { copy: true },
        timeout,
      }),
    );
    if (result.ok && result.value.t === 'ok') {
      counts.compiles += 1;
      target.compiled.set(rule.hash, true);
      if (target.compiled.size > limits.maxCompiled) {
        const oldest = target.compiled.keys().next().value as string;
        target.compiled.delete(oldest);
        target.forget.applyIgnored(undefined, [oldest], { arguments: { copy: true } });
      }
    }
    return result as Guarded<Step>;
  }

  const fault = (rule: RuleRef | null, reason: FaultReason, message: string): FaultedOutcome => ({
    kind: 'faulted',
    rule,
    reason,
    message: clip(message),
  });

  /**
   * Every rule of the list compiles before any runs: a list with a broken rule faults whatever
   * the delivery, rather than only when evaluation happens to reach that rule. Null: all compiled.
   */
  async function compileAll(
    target: Live,
    budget: Budget,
    rules: readonly WireRule[],
    refs: readonly RuleRef[],
  ): Promise<{ outcome: Outcome; stuck: boolean } | null> {
    for (const [index, rule] of rules.entries()) {
      const ref = refs[index]!;
      const compiled = await ensureCompiled(target, budget, rule);
      if (!compiled.ok)
        return { outcome: fault(ref, compiled.reason, compiled.message), stuck: compiled.stuck };
      if (compiled.value.t !== 'ok') {
        return {
          outcome: fault(ref, 'compile', 'm' in compiled.value ? compiled.value.m : 'does not compile'),
          stuck: false,
        };
      }
    }
    return null;
  }

  /** What a rule's step comes to. */
  function decide(step: Step, ref: RuleRef): Outcome | null {
    switch (step.t) {
      case 'continue':
        return null;
      case 'route': {
        const problem = routeQueueProblem(step.q);
        if (problem) return fault(ref, 'invalid', `invalid action: ${problem}`);
        return { kind: 'routed', queue: step.q, rule: ref };
      }
      case 'drop':
        return { kind: 'dropped', rule: ref };
      case 'quarantine':
        return { kind: 'held', rule: ref };
      case 'invalid':
        return fault(ref, 'invalid', step.m);
      case 'compile':
        return fault(ref, 'compile', step.m);
      case 'threw':
        return fault(ref, step.mem ? 'memory' : 'threw', step.m);
      case 'ok':
        return fault(ref, 'crashed', 'sandbox protocol error');
      default: {
        const never: never = step;
        return fault(ref, 'crashed', `sandbox protocol error: ${JSON.stringify(never)}`);
      }
    }
  }

  /**
   * The list in one call into the isolate (one crossing of threads, not two for each rule): the
   * delivery is copied in, the rules run in order, and the limits are checked around the call as
   * around each rule before. A call stopped midway names the rule at the position the isolate last
   * wrote. `trace`: the heap was over its limit after several rules ran, so which rule to blame is
   * found by evaluating again one rule at a time (evaluateStepwise).
   */
  async function evaluateOn(
    target: Live,
    rules: readonly WireRule[],
    delivery: RuleDelivery,
  ): Promise<{ outcome: Outcome; stuck: boolean; trace?: boolean }> {
    const budget = guard.budget(target);
    const refs = rules.map((rule, index): RuleRef => ({ id: rule.id, index }));
    const broken = await compileAll(target, budget, rules, refs);
    if (broken) return broken;
    Atomics.store(target.position, 0, -1);
    const ran = await guard.run(target, budget, (timeout) =>
      target.evaluate.apply(undefined, [rules.map((rule) => rule.hash), delivery], {
        arguments: { copy: true },
        result: { copy: true },
        timeout,
      }),
    );
    if (!ran.ok) {
      const at = Atomics.load(target.position, 0);
      const ref = refs[at];
      if (!ref) {
        return {
          outcome: fault(
            null,
            ran.reason,
            `the delivery could not be copied into the sandbox: ${ran.message}`,
          ),
          stuck: ran.stuck,
        };
      }
      return { outcome: fault(ref, ran.reason, ran.message), stuck: ran.stuck };
    }
    const step = ran.value as ListStep;
    const ref = refs[step.i];
    if (!ref) return { outcome: fault(null, 'crashed', 'sandbox protocol error'), stuck: false };
    const checked = guard.after(target, budget);
    if (!checked.ok) {
      return {
        outcome: fault(ref, checked.reason, checked.message),
        stuck: checked.stuck,
        trace: checked.reason === 'memory' && step.i > 0,
      };
    }
    return { outcome: decide(step, ref) ?? { kind: 'default' }, stuck: false };
  }

  /**
   * The list one rule per call, the heap measured after each: what evaluation did before it ran in
   * one call, kept to find the rule a memory overrun seen only after the list belongs to.
   */
  async function evaluateStepwise(
    target: Live,
    rules: readonly WireRule[],
    delivery: RuleDelivery,
  ): Promise<{ outcome: Outcome; stuck: boolean }> {
    const budget = guard.budget(target);
    const refs = rules.map((rule, index): RuleRef => ({ id: rule.id, index }));
    const broken = await compileAll(target, budget, rules, refs);
    if (broken) return broken;
    const copied = await guard.run(target, budget, (timeout) =>
      target.setDelivery.apply(undefined, [delivery], { arguments: { copy: true }, timeout }),
    );
    if (!copied.ok) {
      return {
        outcome: fault(
          null,
          copied.reason,
          `the delivery could not be copied into the sandbox: ${copied.message}`,
        ),
        stuck: copied.stuck,
      };
    }
    for (const [index, rule] of rules.entries()) {
      const ref = refs[index]!;
      const ran = await guard.run(target, budget, (timeout) =>
        target.run.apply(undefined, [rule.hash, index === rules.length - 1], {
          arguments: { copy: true },
          result: { copy: true },
          timeout,
        }),
      );
      if (!ran.ok) return { outcome: fault(ref, ran.reason, ran.message), stuck: ran.stuck };
      const checked = guard.after(target, budget);
      if (!checked.ok) return { outcome: fault(ref, checked.reason, checked.message), stuck: checked.stuck };
      const decided = decide(ran.value as Step, ref);
      if (decided) return { outcome: decided, stuck: false };
    }
    return { outcome: { kind: 'default' }, stuck: false };
  }

  async function evaluate(rules: readonly WireRule[], delivery: RuleDelivery) {
    counts.evaluations += 1;
    let target: Live;
    try {
      target = await current();
    } catch (error) {
      counts.faults += 1;
      const text = error instanceof Error ? error.message : String(error);
      return {
        outcome: fault(null, 'crashed', `the sandbox could not create an isolate: ${text}`),
        recycle: true,
      };
    }
    let { outcome, stuck, trace } = await evaluateOn(target, rules, delivery);
    if (outcome.kind === 'faulted') {
      counts.faults += 1;
      retire(target, stuck);
    }
    if (trace && !stuck) {
      // Which of the rules that ran left the heap over its limit: the same list again in a fresh
      // isolate, measured after each rule. A list that does not overrun again keeps the first
      // finding (the last rule that ran).
      const fresh = await current().catch(() => null);
      if (fresh) {
        const traced = await evaluateStepwise(fresh, rules, delivery);
        if (traced.outcome.kind === 'faulted') {
          retire(fresh, traced.stuck);
          stuck = traced.stuck;
          if (traced.outcome.reason === 'memory') outcome = traced.outcome;
        }
      }
    }
    return { outcome, recycle: stuck };
  }

  async function compileCheck(rules: readonly WireRule[]) {
    const problems: CompileProblem[] = [];
    for (const [index, rule] of rules.entries()) {
      const ref = { id: rule.id, index };
      let target: Live;
      try {
        target = await current();
      } catch (error) {
        const text = error instanceof Error ? error.message : String(error);
        problems.push({ rule: ref, message: `the sandbox could not create an isolate: ${text}` });
        return { problems, recycle: true };
      }
      // Each rule gets a deadline of its own: checking a list is not a delivery's evaluation.
      const budget = guard.budget(target);
      const compiled = await ensureCompiled(target, budget, rule);
      let result: Guarded<Step> = compiled;
      if (compiled.ok && compiled.value.t === 'ok') {
        result = (await guard.run(target, budget, (timeout) =>
          target.check.apply(undefined, [rule.hash], {
            arguments: { copy: true },
            result: { copy: true },
            timeout,
          }),
        )) as Guarded<Step>;
      }
      if (!result.ok) {
        problems.push({
          rule: ref,
          message: clip(`evaluating the rule source faulted (${result.reason}): ${result.message}`),
        });
        retire(target, result.stuck);
        if (result.stuck) return { problems, recycle: true };
      } else if (result.value.t !== 'ok') {
        const message = 'm' in result.value ? result.value.m : 'does not compile';
        problems.push({
          rule: ref,
          message:
            result.value.t === 'threw' ? clip(`evaluating the rule source threw: ${message}`) : message,
        });
        if (result.value.t === 'threw') retire(target, false);
      }
    }
    return { problems, recycle: false };
  }

  async function warmUp(): Promise<void> {
    const probe: WireRule = { id: 'warm-up', source: "() => ({ route: 'ok' })", hash: 'warm-up' };
    const { outcome } = await evaluate([probe], {
      event_type: null,
      headers: {},
      payload: null,
      provider: 'warm-up',
      received_at: new Date(0).toISOString(),
    });
    if (outcome.kind !== 'routed') {
      throw new Error(`the sandbox self-test failed: ${JSON.stringify(outcome)}`);
    }
    counts.evaluations = 0;
  }

  return { evaluate, compileCheck, warmUp, counters: () => ({ ...counts }) };
}
