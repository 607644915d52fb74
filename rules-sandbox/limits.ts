import { createHash } from 'node:crypto';

// The limits of a rule list (how many rules, how long, which queues) are the domain's
// (src/domain/webhook/rules.ts); the sandbox re-exports them and adds its own.
export { RULE_LIMITS, routeQueueProblem, structuralProblems } from '../src/domain/webhook/rules.ts';

/** Bounds the sandbox itself enforces. */
export const SANDBOX_LIMITS = {
  /** The most a fault message carries. */
  maxMessageLength: 500,
  minMemoryLimitMb: 8,
  maxMemoryLimitMb: 16,
} as const;

/** Compiled scripts are cached under this: the same source is the same rule version. */
export const ruleHash = (source: string): string => createHash('sha256').update(source).digest('hex');

export const clip = (text: string): string =>
  text.length > SANDBOX_LIMITS.maxMessageLength
    ? `${text.slice(0, SANDBOX_LIMITS.maxMessageLength - 1)}…`
    : text;
