import type { CompileProblem, FaultedOutcome, Outcome, RuleSource } from '../src/domain/webhook/rules.ts';
import type { Delivery } from './rules.d.ts';

// What a rule is, and what evaluating one can come to, are the domain's (src/domain/webhook/rules.ts).
export type {
  CompileProblem,
  FaultedOutcome,
  FaultReason,
  Outcome,
  RuleRef,
  RuleSource,
} from '../src/domain/webhook/rules.ts';
export { FAULT_REASONS } from '../src/domain/webhook/rules.ts';
export type { Action, Delivery, FormObject, JsonValue, Rule } from './rules.d.ts';

/** What a rule is evaluated against; `toRuleDelivery` builds it from a stored delivery. */
export type RuleDelivery = Delivery;

export interface DryRunReport {
  /** True when every rule compiles and no delivery faulted. */
  readonly ok: boolean;
  /** Non-empty means the deliveries were not evaluated. */
  readonly compile: readonly CompileProblem[];
  /** One outcome per delivery, in order (empty when the list does not compile). */
  readonly outcomes: readonly Outcome[];
  /** The faulting cases: index into the deliveries given, and the fault. */
  readonly faults: readonly { readonly index: number; readonly outcome: FaultedOutcome }[];
}

export type SandboxHealth = 'ok' | 'unavailable';

export interface RuleEngineStats {
  readonly health: SandboxHealth;
  /** The current sandbox process, if one is running. */
  readonly pid: number | null;
  /** Sandbox processes started since the engine was created (restarts included). */
  readonly processStarts: number;
  /** Counters of the current sandbox process. */
  readonly isolatesCreated: number;
  readonly compiles: number;
  readonly cacheHits: number;
  readonly evaluations: number;
  readonly faults: number;
}

export interface RuleEngine {
  /**
   * Evaluates the rules in order. Never rejects because of what a rule does: every rule failure is
   * a `faulted` outcome. Rejects with HooklineError `sandbox_unavailable` when the sandbox cannot
   * run at all (callers answer 503), or when the engine is closed.
   */
  evaluate(rules: readonly RuleSource[], delivery: RuleDelivery): Promise<Outcome>;
  /** The compile problems of a list (empty when it compiles); runs no rule against a delivery. */
  compileCheck(rules: readonly RuleSource[]): Promise<CompileProblem[]>;
  /** The save dry run: compiles, then evaluates every delivery, and lists the faulting cases. */
  dryRun(rules: readonly RuleSource[], deliveries: readonly RuleDelivery[]): Promise<DryRunReport>;
  /** `unavailable` when the sandbox process cannot be started (answer 503 for webhooks with rules). */
  health(): SandboxHealth;
  stats(): Promise<RuleEngineStats>;
  close(): Promise<void>;
}

export interface RuleEngineOptions {
  /** Wall-clock deadline for one evaluation (all rules), enforced from outside the isolate. Default 250. */
  readonly deadlineMs?: number;
  /** Isolate time one evaluation may use (isolate.cpuTime). Default 100. */
  readonly cpuBudgetMs?: number;
  /** Isolate heap limit in MB, 8 to 16. Default 16. */
  readonly memoryLimitMb?: number;
  /** Evaluations waiting for the sandbox beyond this are refused as unavailable. Default 1000. */
  readonly maxQueue?: number;
  /** How long a sandbox process may take to report ready. Default 10000. */
  readonly startTimeoutMs?: number;
  readonly logger?: EngineLogger;
  /** Test only: the module the sandbox process runs (to simulate a sandbox that cannot start). */
  readonly childModule?: URL;
}

/** The subset of pino the engine logs through. */
export interface EngineLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}
