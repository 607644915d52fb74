import { QUARANTINE, QUEUE_PATTERN } from '../queue.ts';

/**
 * What a webhook's rules are, as the domain judges them before anything reaches the sandbox: the
 * limits of a list, and the outcomes the sandbox reports (rules-sandbox implements evaluation).
 */
export const RULE_LIMITS = {
  maxRules: 50,
  maxSourceLength: 8_192,
  maxIdLength: 128,
} as const;

/** A webhook has at most this many routes. */
export const MAX_ROUTES = 50;

/** One stored rule: a stable id (for list/move/update verbs and fault reports) and its source. */
export interface RuleSource {
  readonly id: string;
  /** A JavaScript expression that evaluates to a `(delivery) => action` function. */
  readonly source: string;
}

/** The rule an outcome names: its id and its position (0-based) in the evaluated list. */
export interface RuleRef {
  readonly id: string;
  readonly index: number;
}

/**
 * Why evaluation stopped without a decision. `invalid`: the rule returned something that is not
 * an action. `crashed`: the sandbox process died (or hung and was killed) under the evaluation.
 */
export const FAULT_REASONS = ['threw', 'invalid', 'timeout', 'memory', 'cpu', 'compile', 'crashed'] as const;
export type FaultReason = (typeof FAULT_REASONS)[number];

export interface FaultedOutcome {
  readonly kind: 'faulted';
  /** The rule that faulted; null when no single rule is to blame (the sandbox process died, the
   * delivery itself was too large to copy in). */
  readonly rule: RuleRef | null;
  readonly reason: FaultReason;
  /** Short, human-readable; never contains host paths or stack traces. */
  readonly message: string;
}

/**
 * The result of evaluating a webhook's rules against one delivery. `held` is a rule's quarantine
 * action; `default` means every rule continued. A faulted delivery is held in quarantine too
 * (fail closed); the caller records which of the two happened.
 */
export type Outcome =
  | { readonly kind: 'routed'; readonly queue: string; readonly rule: RuleRef }
  | { readonly kind: 'dropped'; readonly rule: RuleRef }
  | { readonly kind: 'held'; readonly rule: RuleRef }
  | { readonly kind: 'default' }
  | FaultedOutcome;

/** A rule of a list that is refused: structurally, or because it does not compile. */
export interface CompileProblem {
  readonly rule: RuleRef;
  readonly message: string;
}

/** Structural problems of a list: too many rules, empty or over-long sources, bad or repeated ids. */
export function structuralProblems(rules: readonly RuleSource[]): CompileProblem[] {
  const problems: CompileProblem[] = [];
  const seen = new Set<string>();
  rules.forEach((rule, index) => {
    const id = typeof rule?.id === 'string' ? rule.id : '';
    const ref = { id, index };
    if (index >= RULE_LIMITS.maxRules) {
      problems.push({ rule: ref, message: `a webhook has at most ${RULE_LIMITS.maxRules} rules` });
    } else if (id.length === 0 || id.length > RULE_LIMITS.maxIdLength) {
      problems.push({ rule: ref, message: `a rule id is 1 to ${RULE_LIMITS.maxIdLength} characters` });
    } else if (seen.has(id)) {
      problems.push({ rule: ref, message: `rule id ${JSON.stringify(id)} appears twice in the list` });
    } else if (typeof rule.source !== 'string' || rule.source.trim().length === 0) {
      problems.push({ rule: ref, message: 'the rule source is empty' });
    } else if (id.includes('\u0000') || rule.source.includes('\u0000')) {
      // PostgreSQL refuses NUL in the webhooks read model's jsonb; a rule writes "\0" instead.
      problems.push({ rule: ref, message: 'a rule id or source must not contain a NUL character' });
    } else if (rule.source.length > RULE_LIMITS.maxSourceLength) {
      problems.push({
        rule: ref,
        message: `a rule source is at most ${RULE_LIMITS.maxSourceLength} characters`,
      });
    }
    seen.add(id);
  });
  return problems;
}

/** Why a route's queue is refused, or null when it is a queue a rule may route to. */
export function routeQueueProblem(queue: string): string | null {
  if (queue === QUARANTINE) {
    return '`quarantine` is reserved: return { quarantine: true } to hold a delivery';
  }
  if (!QUEUE_PATTERN.test(queue))
    return `route queue ${JSON.stringify(queue)} must match ${QUEUE_PATTERN.source}`;
  return null;
}
