import { hashCredential, mintEndpointToken, mintIngestToken } from '../auth/credentials.ts';
import { type CommandDeps, handleCommand } from '../commands/handle-command.ts';
import { kebab } from '../domain/agent/name.ts';
import { checkVendScope, endpointDecider } from '../domain/endpoint/decide.ts';
import { endpointStream } from '../domain/endpoint/events.ts';
import type { Verb } from '../domain/endpoint/verbs.ts';
import { webhookDecider } from '../domain/webhook/decide.ts';
import { type WebhookScheme, webhookStream } from '../domain/webhook/events.ts';
import type { Position } from '../eventstore/port.ts';
import { newId, randomBase32 } from '../ids.ts';
import { chooseSigning, type SigningChoice } from '../webhooks/create.ts';
import { ensureAgent } from './agents.ts';
import { reserveSlug } from './resolve.ts';

export interface VendInput {
  readonly operator: string;
  readonly human: string;
  readonly name: string;
  /** 1 to 16 queues; the first is the one its webhook feeds. */
  readonly queues: readonly string[];
  readonly verbs: readonly Verb[];
  readonly expiresAt: Date | null;
  readonly replayTargets: readonly string[];
  /** How its webhook's senders sign (default `none`: the URL is the credential). */
  readonly webhookSigning?: SigningChoice | undefined;
}

export interface Vended {
  readonly endpointId: string;
  readonly slug: string;
  readonly agentId: string;
  readonly agentName: string;
  readonly agentCreated: boolean;
  readonly queues: readonly string[];
  readonly verbs: readonly Verb[];
  /** The endpoint bearer, in the clear only here: it is returned once and never stored. */
  readonly token: string;
  readonly webhookId: string;
  /** The ingest URL's secret part, likewise returned once. */
  readonly ingestToken: string;
  readonly webhookScheme: WebhookScheme;
  /** Its signing secret in the clear, returned once; null for the scheme none. */
  readonly webhookSecret: string | null;
  readonly expiresAt: Date | null;
  readonly replayTargets: readonly string[];
  /** Position of the last append, for read-your-writes. */
  readonly position: Position;
}

export interface VendDeps extends CommandDeps {
  /**
   * The SSRF guard for replay targets (release 0.4.0): throws a HooklineError (400) for a target
   * it refuses. Called for every target before anything is minted.
   */
  readonly checkReplayTarget: (url: string) => Promise<void>;
  /** Seals a webhook signing secret (the secret box), needed when a vend names a scheme. */
  readonly seal?: ((secret: string, webhookId: string) => string) | undefined;
}

const SLUG_ATTEMPTS = 8;

/**
 * POST /api/v1/endpoints (spec 4.11): registers (or reuses) the agent, then mints the endpoint,
 * its credential, and its token-trust webhook. Every check runs before the first append, so a
 * refused vend mints nothing. The webhook is written before the endpoint: a crash in between
 * leaves a webhook whose URL nobody has ever seen, never an endpoint without its webhook.
 */
export async function vendEndpoint(deps: VendDeps, input: VendInput): Promise<Vended> {
  checkVendScope(input, deps.clock.now());
  const signing = chooseSigning(input.webhookSigning ?? { scheme: 'none' });
  if (signing && !deps.seal) throw new Error('a vend with a webhook scheme needs the secret box');
  for (const target of input.replayTargets) await deps.checkReplayTarget(target);

  const agent = await ensureAgent(deps, { operator: input.operator, name: input.name });
  const endpointId = newId('ep');
  const slug = await claimSlug(deps, input.name, endpointId);
  const token = mintEndpointToken();
  const ingestToken = mintIngestToken();
  const webhookId = newId('wh');

  await handleCommand(
    deps,
    webhookStream(webhookId),
    webhookDecider,
    {
      type: 'CreateWebhook',
      webhookId,
      endpointId,
      operator: input.operator,
      human: input.human,
      name: slug,
      queue: input.queues[0]!,
      tokenHash: hashCredential(ingestToken),
      ...(signing && deps.seal
        ? {
            signing: {
              scheme: signing.scheme,
              secretSealed: deps.seal(signing.secret, webhookId),
              required: signing.required,
            },
          }
        : {}),
    },
    { newStream: true, retries: 0 },
  );
  const vended = await handleCommand(
    deps,
    endpointStream(endpointId),
    endpointDecider,
    {
      type: 'VendEndpoint',
      endpointId,
      slug,
      agentId: agent.agentId,
      agentName: agent.name,
      operator: input.operator,
      human: input.human,
      queues: input.queues,
      verbs: input.verbs,
      tokenHash: hashCredential(token),
      webhookId,
      replayTargets: input.replayTargets,
      expiresAt: input.expiresAt,
    },
    { newStream: true, retries: 0 },
  );

  return {
    endpointId,
    slug,
    agentId: agent.agentId,
    agentName: agent.name,
    agentCreated: agent.created,
    queues: input.queues,
    verbs: input.verbs,
    token,
    webhookId,
    ingestToken,
    webhookScheme: input.webhookSigning?.scheme ?? 'none',
    webhookSecret: signing?.secret ?? null,
    expiresAt: input.expiresAt,
    replayTargets: input.replayTargets,
    position: vended.position!,
  };
}

/** kebab(name) + '-' + 6 base32 characters (30 bits); a taken slug draws again. */
export async function claimSlug(deps: CommandDeps, name: string, endpointId: string): Promise<string> {
  const base = kebab(name);
  for (let attempt = 0; attempt < SLUG_ATTEMPTS; attempt++) {
    const slug = `${base}-${randomBase32(6)}`;
    if (await reserveSlug(deps, slug, endpointId)) return slug;
  }
  throw new Error(`could not find a free slug for ${JSON.stringify(name)}`);
}
