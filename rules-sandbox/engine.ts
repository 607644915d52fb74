import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { HooklineError } from '../src/errors.ts';
import { ruleHash, SANDBOX_LIMITS, structuralProblems } from './limits.ts';
import type { HostMessage, SandboxCounters, SandboxLimits, SandboxMessage, WireRule } from './protocol.ts';
import type {
  CompileProblem,
  DryRunReport,
  EngineLogger,
  FaultedOutcome,
  Outcome,
  RuleDelivery,
  RuleEngine,
  RuleEngineOptions,
  RuleSource,
  SandboxHealth,
} from './types.ts';

type Request =
  | { type: 'evaluate'; rules: WireRule[]; delivery: RuleDelivery }
  | { type: 'compile'; rules: WireRule[] }
  | { type: 'stats' };
type Reply = Extract<SandboxMessage, { id: number }>;

interface Job {
  readonly request: Request;
  readonly watchdogMs: number;
  readonly resolve: (reply: Reply) => void;
  readonly reject: (error: Error) => void;
  id?: number;
  /** The watchdog, armed while the job is the oldest one the sandbox has not answered. */
  timer?: NodeJS.Timeout;
  /** Sandbox processes that died while this job was the one they were running. */
  attempts: number;
}

interface Proc {
  readonly child: ChildProcess;
  ready: boolean;
  gone: boolean;
  /**
   * Why the host killed it, when it did. `unreachable`: a request could not be written to it, which
   * is how a process that has just died first shows (its exit event comes later).
   */
  killedFor?: 'watchdog' | 'recycle' | 'start-timeout' | 'close' | 'unreachable';
  fatal?: string;
  settleStart: () => void;
}

const silent: EngineLogger = { info: () => {}, warn: () => {}, error: () => {} };
const ZERO: SandboxCounters = { isolatesCreated: 0, compiles: 0, cacheHits: 0, evaluations: 0, faults: 0 };
/** Slack for IPC and process scheduling on top of the limits the sandbox enforces itself. */
const WATCHDOG_SLACK_MS = 1_000;
/**
 * Requests sent to the sandbox before the first of them is answered. The sandbox runs them one at
 * a time, in order; sending the next ones at once spares each the wait for this process's event
 * loop between an answer and the next request.
 */
const IN_FLIGHT_MAX = 32;

const unavailable = (detail: string) => new HooklineError('sandbox_unavailable', detail);

function sandboxLimits(options: RuleEngineOptions): SandboxLimits {
  const memoryLimitMb = options.memoryLimitMb ?? SANDBOX_LIMITS.maxMemoryLimitMb;
  if (memoryLimitMb < SANDBOX_LIMITS.minMemoryLimitMb || memoryLimitMb > SANDBOX_LIMITS.maxMemoryLimitMb) {
    throw new RangeError(
      `memoryLimitMb must be ${SANDBOX_LIMITS.minMemoryLimitMb} to ${SANDBOX_LIMITS.maxMemoryLimitMb}`,
    );
  }
  const deadlineMs = options.deadlineMs ?? 250;
  const cpuBudgetMs = options.cpuBudgetMs ?? 100;
  if (!(deadlineMs >= 1) || !(cpuBudgetMs >= 1))
    throw new RangeError('deadlineMs and cpuBudgetMs must be at least 1');
  return { deadlineMs, cpuBudgetMs, memoryLimitMb, graceMs: 100, maxCompiled: 1_000 };
}

/** SHA-256 of rule sources seen lately: the same lists come with every delivery of a webhook. */
const hashes = new Map<string, string>();
const HASHES_KEPT = 2_000;
function hashOf(source: string): string {
  let hash = hashes.get(source);
  if (hash === undefined) {
    hash = ruleHash(source);
    if (hashes.size >= HASHES_KEPT) hashes.clear();
    hashes.set(source, hash);
  }
  return hash;
}

const toWire = (rules: readonly RuleSource[]): WireRule[] =>
  rules.map((r) => ({ id: r.id, source: r.source, hash: hashOf(r.source) }));

/**
 * Starts the sandbox process and resolves once it is ready, or once it has failed to start (then
 * `health()` is `unavailable` and the engine keeps retrying in the background).
 */
export async function createRuleEngine(options: RuleEngineOptions = {}): Promise<RuleEngine> {
  const limits = sandboxLimits(options);
  const logger = options.logger ?? silent;
  const childPath = fileURLToPath(options.childModule ?? new URL('./child.ts', import.meta.url));
  const maxQueue = options.maxQueue ?? 1_000;
  const startTimeoutMs = options.startTimeoutMs ?? 10_000;

  let proc: Proc | null = null;
  let closed = false;
  let startFailures = 0;
  let processStarts = 0;
  let nextId = 1;
  let retryTimer: NodeJS.Timeout | undefined;
  const queue: Job[] = [];
  /** Sent and not yet answered, oldest first: the first is the one the sandbox is running. */
  let inFlight: Job[] = [];

  function start(): Promise<void> {
    processStarts += 1;
    let settleStart = () => {};
    const started = new Promise<void>((resolve) => {
      settleStart = resolve;
    });
    // --no-node-snapshot: isolated-vm asks for it on Node 20 and later; the sandbox process is ours
    // alone, so it is set there whatever the service itself was started with.
    const child = fork(childPath, [JSON.stringify(limits)], {
      execArgv: ['--no-node-snapshot'],
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const current: Proc = { child, ready: false, gone: false, settleStart };
    proc = current;
    holdOpen();
    const startTimer = setTimeout(() => kill(current, 'start-timeout'), startTimeoutMs);
    child.on('message', (message: SandboxMessage) => {
      if (message.type === 'ready') {
        clearTimeout(startTimer);
        current.ready = true;
        startFailures = 0;
        logger.info({ pid: message.pid }, 'rule sandbox ready');
        current.settleStart();
        pump();
      } else if (message.type === 'fatal') {
        current.fatal = message.message;
      } else {
        onReply(current, message);
      }
    });
    const onGone = (detail: string) => {
      clearTimeout(startTimer);
      onExit(current, detail);
    };
    child.on('exit', (code, signal) => onGone(signal ? `signal ${signal}` : `exit code ${code}`));
    child.on('error', (error) => onGone(error.message));
    return started;
  }

  /**
   * The sandbox process never keeps the service alive on its own; while work is waiting for it,
   * though, it must (a queued evaluation would otherwise be dropped by an idle event loop).
   */
  function holdOpen(): void {
    const target = proc;
    if (!target || target.gone) return;
    const busy = inFlight.length > 0 || queue.length > 0;
    if (busy) {
      target.child.ref();
      target.child.channel?.ref();
    } else {
      target.child.unref();
      target.child.channel?.unref();
    }
  }

  function kill(target: Proc, why: NonNullable<Proc['killedFor']>): void {
    if (target.gone) return;
    target.killedFor ??= why;
    target.child.kill('SIGKILL');
  }

  /** The oldest unanswered job is the one running: its watchdog runs from when it became so. */
  function armHead(target: Proc): void {
    const head = inFlight[0];
    if (head && head.timer === undefined) {
      head.timer = setTimeout(() => kill(target, 'watchdog'), head.watchdogMs);
    }
  }

  function onReply(from: Proc, reply: Reply): void {
    // The sandbox answers in the order it was asked.
    const job = inFlight[0];
    if (from !== proc || !job || job.id !== reply.id) return;
    clearTimeout(job.timer);
    inFlight.shift();
    job.resolve(reply);
    if ('recycle' in reply && reply.recycle) {
      logger.warn({ pid: from.child.pid }, 'rule sandbox has a stuck isolate; replacing the process');
      kill(from, 'recycle');
    } else {
      armHead(from);
      pump();
    }
    holdOpen();
  }

  function onExit(target: Proc, detail: string): void {
    if (target.gone) return;
    target.gone = true;
    target.settleStart();
    if (target !== proc) return;
    proc = null;
    if (!target.ready) {
      startFailures += 1;
      const delay = Math.min(30_000, 1_000 * 2 ** (startFailures - 1));
      logger.error(
        { detail, reason: target.fatal ?? target.killedFor, retryInMs: delay },
        'rule sandbox failed to start; webhooks with rules answer 503',
      );
      for (const job of queue.splice(0)) job.reject(unavailable('the rule sandbox cannot start'));
      if (!closed) {
        retryTimer = setTimeout(() => void start(), delay);
        retryTimer.unref();
      }
      return;
    }
    const unanswered = inFlight;
    inFlight = [];
    for (const job of unanswered) {
      clearTimeout(job.timer);
      job.timer = undefined;
    }
    // The jobs behind the one running never ran to an answer: they go first in the new process,
    // in order, their tries untouched.
    const [head, ...again] = unanswered;
    if (head) {
      if (target.killedFor === 'recycle') {
        // Killed for an isolate stuck under a job already answered: this one is not to blame.
        again.unshift(head);
      } else {
        head.attempts += 1;
        // A process that died on its own may have died before the job reached it (or of something
        // else entirely): the job gets one more try in the new process before it counts as crashed.
        const diedOnItsOwn = target.killedFor === undefined || target.killedFor === 'unreachable';
        if (diedOnItsOwn && head.attempts < 2) again.unshift(head);
        else head.resolve(crashReply(head, target.killedFor === 'watchdog'));
      }
    }
    queue.unshift(...again);
    if (target.killedFor !== 'recycle' && target.killedFor !== 'close') {
      logger.warn({ detail, killedFor: target.killedFor }, 'rule sandbox process ended; restarting it');
    }
    if (!closed) void start();
  }

  /** What a job gets when the process under it died or was killed for not answering. */
  function crashReply(job: Job, hung: boolean): Reply {
    const id = job.id ?? 0;
    const message = hung
      ? 'the sandbox did not answer in time and was replaced'
      : 'the sandbox process ended during the evaluation and was replaced';
    const outcome: FaultedOutcome = {
      kind: 'faulted',
      rule: null,
      reason: hung ? 'timeout' : 'crashed',
      message,
    };
    switch (job.request.type) {
      case 'evaluate':
        return { type: 'evaluated', id, outcome, recycle: false };
      case 'compile': {
        const first = job.request.rules[0];
        const problems = first
          ? [{ rule: { id: first.id, index: 0 }, message: `checking the rules: ${message}` }]
          : [];
        return { type: 'compiled', id, problems, recycle: false };
      }
      case 'stats':
        return { type: 'stats', id, counters: ZERO };
    }
  }

  function pump(): void {
    const target = proc;
    // A process the host has started killing takes no more work, though its exit is still to come.
    if (closed || !target?.ready || target.gone || target.killedFor) return;
    while (queue.length > 0 && inFlight.length < IN_FLIGHT_MAX) {
      const job = queue.shift()!;
      job.id = nextId++;
      inFlight.push(job);
      const message = { ...job.request, id: job.id } as HostMessage;
      try {
        target.child.send(message, (error) => {
          if (error) kill(target, 'unreachable');
        });
      } catch (error) {
        // Only a value that cannot be serialized throws here; the sandbox never saw it.
        inFlight.pop();
        job.reject(new TypeError(`the delivery cannot be sent to the sandbox: ${(error as Error).message}`));
      }
    }
    armHead(target);
    holdOpen();
  }

  function submit(request: Request, watchdogMs: number): Promise<Reply> {
    if (closed) return Promise.reject(unavailable('the rule engine is closed'));
    if (startFailures > 0) return Promise.reject(unavailable('the rule sandbox cannot start'));
    if (queue.length >= maxQueue) return Promise.reject(unavailable('the rule sandbox is overloaded'));
    return new Promise((resolve, reject) => {
      queue.push({ request, watchdogMs, resolve, reject, attempts: 0 });
      holdOpen();
      pump();
    });
  }

  const perRuleMs = limits.deadlineMs + limits.graceMs;

  async function evaluate(rules: readonly RuleSource[], delivery: RuleDelivery): Promise<Outcome> {
    if (closed) throw unavailable('the rule engine is closed');
    if (rules.length === 0) return { kind: 'default' };
    const problem = structuralProblems(rules)[0];
    if (problem) return { kind: 'faulted', rule: problem.rule, reason: 'compile', message: problem.message };
    const reply = await submit(
      { type: 'evaluate', rules: toWire(rules), delivery },
      perRuleMs * 3 + WATCHDOG_SLACK_MS,
    );
    if (reply.type !== 'evaluated') throw unavailable('the rule sandbox answered out of turn');
    return reply.outcome;
  }

  async function compileCheck(rules: readonly RuleSource[]): Promise<CompileProblem[]> {
    if (rules.length === 0) return [];
    const structural = structuralProblems(rules);
    if (structural.length > 0) return structural;
    const reply = await submit(
      { type: 'compile', rules: toWire(rules) },
      perRuleMs * 3 * rules.length + WATCHDOG_SLACK_MS,
    );
    if (reply.type !== 'compiled') throw unavailable('the rule sandbox answered out of turn');
    return reply.problems;
  }

  async function dryRun(
    rules: readonly RuleSource[],
    deliveries: readonly RuleDelivery[],
  ): Promise<DryRunReport> {
    const compile = await compileCheck(rules);
    if (compile.length > 0) return { ok: false, compile, outcomes: [], faults: [] };
    const outcomes: Outcome[] = [];
    const faults: { index: number; outcome: FaultedOutcome }[] = [];
    for (const [index, delivery] of deliveries.entries()) {
      const outcome = await evaluate(rules, delivery);
      outcomes.push(outcome);
      if (outcome.kind === 'faulted') faults.push({ index, outcome });
    }
    return { ok: faults.length === 0, compile, outcomes, faults };
  }

  const health = (): SandboxHealth => (closed || startFailures > 0 ? 'unavailable' : 'ok');

  async function stats() {
    let counters = ZERO;
    if (proc?.ready && !closed) {
      const reply = await submit({ type: 'stats' }, WATCHDOG_SLACK_MS * 5);
      if (reply.type === 'stats') counters = reply.counters;
    }
    return {
      health: health(),
      pid: proc?.ready ? (proc.child.pid ?? null) : null,
      processStarts,
      ...counters,
    };
  }

  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    clearTimeout(retryTimer);
    const error = unavailable('the rule engine is closed');
    for (const job of queue.splice(0)) job.reject(error);
    for (const job of inFlight.splice(0)) {
      clearTimeout(job.timer);
      job.reject(error);
    }
    const target = proc;
    if (target && !target.gone) {
      const exited = new Promise<void>((resolve) => target.child.once('exit', () => resolve()));
      // The process is unref'd so it never holds the service open; here we do wait for it.
      target.child.ref();
      kill(target, 'close');
      await exited;
    }
  }

  await start();
  return { evaluate, compileCheck, dryRun, health, stats, close };
}
