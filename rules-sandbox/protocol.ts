import type { CompileProblem, FaultReason, Outcome, RuleDelivery } from './types.ts';

/** Limits the host hands the sandbox process at start (its first argument, as JSON). */
export interface SandboxLimits {
  readonly deadlineMs: number;
  readonly cpuBudgetMs: number;
  readonly memoryLimitMb: number;
  /** After the host disposes an isolate, how long the call may take to unwind before the
   * process counts as stuck and asks to be replaced. */
  readonly graceMs: number;
  /** Compiled rule versions kept per isolate (least recently used are forgotten). */
  readonly maxCompiled: number;
}

/** A rule as it travels to the sandbox: its content hash is computed once, by the host. */
export interface WireRule {
  readonly id: string;
  readonly source: string;
  readonly hash: string;
}

export type HostMessage =
  | {
      readonly type: 'evaluate';
      readonly id: number;
      readonly rules: WireRule[];
      readonly delivery: RuleDelivery;
    }
  | { readonly type: 'compile'; readonly id: number; readonly rules: WireRule[] }
  | { readonly type: 'stats'; readonly id: number };

export interface SandboxCounters {
  readonly isolatesCreated: number;
  readonly compiles: number;
  readonly cacheHits: number;
  readonly evaluations: number;
  readonly faults: number;
}

/**
 * `recycle`: the sandbox process saw an isolate that did not unwind after being stopped (a native
 * loop that ignores termination); the host kills the process and starts a fresh one.
 */
export type SandboxMessage =
  | { readonly type: 'ready'; readonly pid: number }
  | { readonly type: 'fatal'; readonly message: string }
  | { readonly type: 'evaluated'; readonly id: number; readonly outcome: Outcome; readonly recycle: boolean }
  | {
      readonly type: 'compiled';
      readonly id: number;
      readonly problems: CompileProblem[];
      readonly recycle: boolean;
    }
  | { readonly type: 'stats'; readonly id: number; readonly counters: SandboxCounters };

export type { FaultReason };
