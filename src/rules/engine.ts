import { createRuleEngine, type RuleEngine, type RuleEngineOptions } from '../../rules-sandbox/index.ts';
import { HooklineError } from '../errors.ts';

/**
 * The runtime's one rule engine, started on first use: most processes (and most tests) never
 * evaluate a rule, and the sandbox is a process of its own. Closed with the runtime. Until it has
 * been asked to start, health is `ok` (nothing has failed); a start that fails is retried by the
 * engine itself and reported as `unavailable`.
 */
export function createLazyRuleEngine(options: RuleEngineOptions = {}): RuleEngine {
  let engine: Promise<RuleEngine> | null = null;
  let ready: RuleEngine | null = null;
  let closed = false;

  const get = (): Promise<RuleEngine> => {
    if (closed) return Promise.reject(new HooklineError('sandbox_unavailable', 'the rule engine is closed'));
    engine ??= createRuleEngine(options).then((e) => {
      ready = e;
      return e;
    });
    return engine;
  };

  return {
    evaluate: async (rules, delivery) => (await get()).evaluate(rules, delivery),
    compileCheck: async (rules) => (await get()).compileCheck(rules),
    dryRun: async (rules, deliveries) => (await get()).dryRun(rules, deliveries),
    health: () => (closed ? 'unavailable' : (ready?.health() ?? 'ok')),
    stats: async () => (await get()).stats(),
    close: async () => {
      closed = true;
      const pending = engine;
      engine = null;
      if (pending) await (await pending).close();
    },
  };
}
