import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ProjectionRunner } from '../../../projections/engine/types.ts';
import type { ProviderListing } from '../../../projections/providers.queries.ts';
import { createIdentityResolver } from '../../auth/identity.ts';
import type { Clock } from '../../clock.ts';
import type { Config } from '../../config.ts';
import type { DB } from '../../db/database.ts';
import type { EventStore, Position } from '../../eventstore/port.ts';
import type { LiveHub } from '../../live/hub.ts';
import type { ReplayClient } from '../../replay/index.ts';
import type { Views } from './views.ts';

/** What the screens need; every screen reads read models only. */
export interface UiDeps {
  readonly config: Config;
  readonly clock: Clock;
  readonly db: DB;
  readonly store: EventStore;
  readonly projections: Pick<ProjectionRunner, 'waitFor'>;
  readonly hub: LiveHub;
  readonly views: Views;
  /** Outbound replay through the SSRF guard (the detail page's Replay). */
  readonly replay: Pick<ReplayClient, 'replay'>;
  /** Every provider with its counters, from `db` (default the app's; a page's snapshot passes its own). */
  readonly listProviders: (db?: DB) => Promise<readonly ProviderListing[]>;
  /** Just the names, for the log's filter: no counters to compute. */
  readonly providerNames: () => Promise<readonly string[]>;
  /** How long a post waits for its own write to reach the read model (default 2 s). */
  readonly readYourWritesMs?: number;
}

export type Page =
  | 'dashboard'
  | 'log'
  | 'providers'
  | 'agents'
  | 'todos'
  | 'webhooks'
  | 'friends'
  | 'settings'
  | 'quarantine'
  | 'problem';

/** An htmx request wants a fragment, except a history restore, which needs the whole page. */
export const wantsFragment = (request: FastifyRequest): boolean =>
  request.headers['hx-request'] === 'true' && request.headers['hx-history-restore-request'] !== 'true';

export function sendHtml(reply: FastifyReply, html: string, status = 200): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(html);
}

/**
 * The values every full page needs (layout: navigation, live pill). `streamAfter`: the log position
 * the page's rows were read at (readAtLogPosition); its stream starts there instead of at the head.
 */
export const layoutContext = (deps: UiDeps, page: Page, streamAfter: Position | null = null) => ({
  page,
  connection: deps.hub.connection(),
  baseUrl: deps.config.baseUrl,
  streamAfter,
});

/** The forward-auth user, when the proxy names one; recorded with settings changes. */
export function actorOf(deps: UiDeps, request: FastifyRequest): string | null {
  const header = deps.config.authUserHeader;
  if (!header) return null;
  const v = request.headers[header];
  return typeof v === 'string' && v.length > 0 && v.length <= 200 ? v : null;
}

/**
 * Whose things a screen shows (spec 1.7: the screens have no sign-in of their own): the
 * forward-auth user when a trusted proxy names one, else HOOKLINE_OPERATOR, as the sign-in page
 * resolves it.
 */
export function humanResolver(config: Config): (request: FastifyRequest) => string {
  const identify = createIdentityResolver(config);
  return (request) => {
    const who = identify(request.raw);
    return who.ok ? who.human : config.operator;
  };
}
