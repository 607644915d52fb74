import type { RuleDelivery, RuleSource } from '../../rules-sandbox/index.ts';

export const delivery = (over: Partial<RuleDelivery> = {}): RuleDelivery => ({
  event_type: 'push',
  headers: { 'content-type': 'application/json', 'x-github-event': 'push' },
  payload: { ref: 'refs/heads/main', repository: { full_name: 'acme/api' }, commits: [{ id: 'a1' }] },
  provider: 'webhook:wh_test',
  received_at: '2026-01-02T03:04:05.678Z',
  ...over,
});

let counter = 0;
/** A rule with a unique id; the source is used as given. */
export const rule = (source: string, id?: string): RuleSource => {
  counter += 1;
  return { id: id ?? `r${counter}`, source };
};

/** A plain rule that must route to `ok`: evaluated after each fault to show the engine recovered. */
export const healthyRule = rule("(d) => (d.event_type === 'push' ? { route: 'ok' } : 'continue')", 'healthy');
