import type { FastifyInstance } from 'fastify';
import { listAgents } from '../../../projections/agents.queries.ts';
import { listEndpoints } from '../../../projections/endpoints.queries.ts';
import type { EndpointRow } from '../../../projections/endpoints.table.ts';
import { operatorQueueCounts } from '../../../projections/todos.queries.ts';
import { listOperatorWebhooks } from '../../../projections/webhooks.queries.ts';
import type { WebhookRow } from '../../../projections/webhooks.table.ts';
import { humanResolver, layoutContext, sendHtml, type UiDeps, wantsFragment } from './context.ts';

export const TODO_STATES = ['pending', 'claimed', 'completed', 'failed'] as const;

/** A queue as the agents screen lists it: its todos by state and where its todo list is. */
export interface QueueView {
  readonly name: string;
  readonly counts: Readonly<Record<(typeof TODO_STATES)[number], number>>;
  readonly url: string;
}

export interface EndpointView {
  readonly slug: string;
  readonly state: 'active' | 'expired' | 'revoked';
  readonly verbs: readonly string[];
  readonly expires_at: Date | null;
  readonly created_at: Date;
  readonly revoked_at: Date | null;
  readonly queues: readonly QueueView[];
  readonly webhooks: readonly WebhookRow[];
}

export interface AgentView {
  readonly id: string;
  readonly name: string;
  readonly description: string | null;
  readonly endpoints: readonly EndpointView[];
}

/** The todo list of one endpoint's queue (`?queue=<slug>/<queue>`), optionally in one state. */
export const queueUrl = (slug: string, queue: string, state?: string): string => {
  const q = new URLSearchParams({ queue: `${slug}/${queue}` });
  if (state) q.set('state', state);
  return `/todos?${q.toString()}`;
};

function endpointState(e: EndpointRow, now: Date): EndpointView['state'] {
  if (e.state === 'revoked') return 'revoked';
  if (e.expires_at !== null && new Date(e.expires_at).getTime() <= now.getTime()) return 'expired';
  return 'active';
}

/** The human's agents, each with its endpoints, their queues (todos by state) and webhooks. */
export async function loadAgentViews(deps: UiDeps, human: string): Promise<AgentView[]> {
  const [agents, endpoints, webhooks, counts] = await Promise.all([
    listAgents(deps.db, human),
    listEndpoints(deps.db, human),
    listOperatorWebhooks(deps.db, human),
    operatorQueueCounts(deps.db, human),
  ]);
  const now = deps.clock.now();
  const countsOf = (endpointId: string, queue: string) => {
    const out = { pending: 0, claimed: 0, completed: 0, failed: 0 };
    for (const c of counts) {
      if (c.endpoint_id === endpointId && c.queue === queue && c.state in out) {
        out[c.state as keyof typeof out] = c.n;
      }
    }
    return out;
  };
  const endpointView = (e: EndpointRow): EndpointView => ({
    slug: e.slug,
    state: endpointState(e, now),
    verbs: e.verbs,
    expires_at: e.expires_at === null ? null : new Date(e.expires_at),
    created_at: new Date(e.created_at),
    revoked_at: e.revoked_at === null ? null : new Date(e.revoked_at),
    queues: e.queues.map((q) => ({ name: q, counts: countsOf(e.id, q), url: queueUrl(e.slug, q) })),
    webhooks: webhooks.filter((w) => w.endpoint_id === e.id),
  });
  const views: AgentView[] = agents.map((a) => ({
    id: a.id,
    name: a.name,
    description: a.description,
    endpoints: endpoints.filter((e) => e.agent_id === a.id).map(endpointView),
  }));
  // An endpoint whose agent the agents read model does not hold still belongs on the screen.
  const known = new Set(agents.map((a) => a.id));
  for (const e of endpoints) {
    if (known.has(e.agent_id)) continue;
    known.add(e.agent_id);
    views.push({
      id: e.agent_id,
      name: e.agent_name,
      description: null,
      endpoints: endpoints.filter((x) => x.agent_id === e.agent_id).map(endpointView),
    });
  }
  return views;
}

/** GET /agents: the human's agents, endpoints with state, queues with their todos by state, webhooks. */
export function registerAgentsPage(app: FastifyInstance, deps: UiDeps): void {
  const humanOf = humanResolver(deps.config);
  app.get('/agents', async (request, reply) => {
    const agents = await loadAgentViews(deps, humanOf(request));
    reply.header('vary', 'HX-Request, HX-History-Restore-Request');
    const view = { agents, states: TODO_STATES, queueUrl };
    if (wantsFragment(request)) return sendHtml(reply, deps.views.render('fragments/agents-list.njk', view));
    return sendHtml(
      reply,
      deps.views.render('pages/agents.njk', { ...layoutContext(deps, 'agents'), ...view }),
    );
  });
}
