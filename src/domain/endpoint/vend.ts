import { hashCredential, mintEndpointToken, mintIngestToken } from '../../auth/credentials.ts';
import type { Clock } from '../../clock.ts';
import { jsonEvent } from '../../eventstore/codec.ts';
import { type EventStore, isWrongExpectedVersion, type Position } from '../../eventstore/port.ts';
import { ensureAgent } from '../agent/ensure.ts';
import { kebab } from '../agent/name.ts';
import { decideCreateTokenWebhook, initialWebhookState, webhookStream } from '../webhook/decide.ts';
import { checkVendScope, decideVend, slugReserved } from './decide.ts';
import { newId, randomBase32 } from './ids.ts';
import { endpointSlugStream, endpointStream, initialEndpointState } from './state.ts';
import type { Verb } from './verbs.ts';

export interface VendInput {
  readonly operator: string;
  readonly human: string;
  readonly name: string;
  readonly queue: string;
  readonly verbs: readonly Verb[];
  readonly expiresAt: Date | null;
  readonly replayTargets: readonly string[];
}

export interface Vended {
  readonly endpointId: string;
  readonly slug: string;
  readonly agentId: string;
  readonly agentName: string;
  readonly agentCreated: boolean;
  readonly queue: string;
  readonly verbs: readonly Verb[];
  /** The endpoint bearer, in the clear only here: it is returned once and never stored. */
  readonly token: string;
  readonly webhookId: string;
  /** The ingest URL's secret part, likewise returned once. */
  readonly ingestToken: string;
  readonly expiresAt: Date | null;
  readonly replayTargets: readonly string[];
  /** Position of the last append, for read-your-writes. */
  readonly position: Position;
}

export interface VendDeps {
  readonly store: EventStore;
  readonly clock: Clock;
  /**
   * The SSRF guard for replay targets (release 0.4.0): throws a HooklineError (400) for a target
   * it refuses. Called for every target before anything is minted.
   */
  readonly checkReplayTarget: (url: string) => Promise<void>;
}

const SLUG_ATTEMPTS = 8;

/**
 * POST /api/v1/endpoints (spec 4.11): registers (or reuses) the agent, then mints the endpoint,
 * its credential, and its token-trust webhook. Every check runs before the first append, so a
 * refused vend mints nothing. The webhook is written before the endpoint: a crash in between
 * leaves a webhook whose URL nobody has ever seen, never an endpoint without its webhook.
 */
export async function vendEndpoint(deps: VendDeps, input: VendInput): Promise<Vended> {
  const { store, clock } = deps;
  checkVendScope(input, clock.now());
  for (const target of input.replayTargets) await deps.checkReplayTarget(target);

  const agent = await ensureAgent(deps, { operator: input.operator, name: input.name });
  const endpointId = newId('ep');
  const slug = await reserveSlug(store, input.name, endpointId);
  const token = mintEndpointToken();
  const ingestToken = mintIngestToken();
  const webhookId = newId('wh');

  const webhookEvents = decideCreateTokenWebhook(
    {
      webhookId,
      endpointId,
      operator: input.operator,
      human: input.human,
      name: slug,
      queue: input.queue,
      tokenHash: hashCredential(ingestToken),
    },
    initialWebhookState,
    clock.now(),
  );
  await store.append(
    webhookStream(webhookId),
    webhookEvents.map((e) => jsonEvent(e.type, e.data)),
    { expectedRevision: 'no_stream' },
  );

  const endpointEvents = decideVend(
    {
      endpointId,
      slug,
      agentId: agent.agentId,
      agentName: agent.name,
      operator: input.operator,
      human: input.human,
      queue: input.queue,
      verbs: input.verbs,
      tokenHash: hashCredential(token),
      webhookId,
      replayTargets: input.replayTargets,
      expiresAt: input.expiresAt,
    },
    initialEndpointState,
    clock.now(),
  );
  const appended = await store.append(
    endpointStream(endpointId),
    endpointEvents.map((e) => jsonEvent(e.type, e.data)),
    { expectedRevision: 'no_stream' },
  );

  return {
    endpointId,
    slug,
    agentId: agent.agentId,
    agentName: agent.name,
    agentCreated: agent.created,
    queue: input.queue,
    verbs: input.verbs,
    token,
    webhookId,
    ingestToken,
    expiresAt: input.expiresAt,
    replayTargets: input.replayTargets,
    position: appended.position,
  };
}

/** kebab(name) + '-' + 6 base32 characters (30 bits); a taken slug draws again. */
async function reserveSlug(store: EventStore, name: string, endpointId: string): Promise<string> {
  const base = kebab(name);
  for (let attempt = 0; attempt < SLUG_ATTEMPTS; attempt++) {
    const slug = `${base}-${randomBase32(6)}`;
    const event = slugReserved(endpointId, slug);
    try {
      await store.append(endpointSlugStream(slug), [jsonEvent(event.type, event.data)], {
        expectedRevision: 'no_stream',
      });
      return slug;
    } catch (err) {
      if (!isWrongExpectedVersion(err)) throw err;
    }
  }
  throw new Error(`could not find a free slug for ${JSON.stringify(name)}`);
}
