import { createHash } from 'node:crypto';
import { QUARANTINE, QUEUE_PATTERN } from '../src/domain/endpoint/queue.ts';
import type { CompileProblem, RuleSource } from './types.ts';

/** Bounds on a rule list, checked before anything reaches the sandbox. */
export const RULE_LIMITS = {
  maxRules: 50,
  maxSourceLength: 8_192,
  maxIdLength: 128,
  /** The most a fault message carries. */
  maxMessageLength: 500,
  minMemoryLimitMb: 8,
  maxMemoryLimitMb: 16,
} as const;

/** Compiled scripts are cached under this: the same source is the same rule version. */
export const ruleHash = (source: string): string => createHash('sha256').update(source).digest('hex');

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

export const clip = (text: string): string =>
  text.length > RULE_LIMITS.maxMessageLength ? `${text.slice(0, RULE_LIMITS.maxMessageLength - 1)}…` : text;
