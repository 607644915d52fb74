// The rule sandbox's public surface. Everything else in this folder is internal.
export { parseForm, type StoredDeliveryView, toRuleDelivery } from './delivery.ts';
export { createRuleEngine } from './engine.ts';
export { RULE_LIMITS, routeQueueProblem, ruleHash, SANDBOX_LIMITS, structuralProblems } from './limits.ts';
export type {
  Action,
  CompileProblem,
  Delivery,
  DryRunReport,
  EngineLogger,
  FaultedOutcome,
  FaultReason,
  Outcome,
  Rule,
  RuleDelivery,
  RuleEngine,
  RuleEngineOptions,
  RuleEngineStats,
  RuleRef,
  RuleSource,
  SandboxHealth,
} from './types.ts';
export { FAULT_REASONS } from './types.ts';
