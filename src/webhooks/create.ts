import { hashCredential, mintIngestToken } from '../auth/credentials.ts';
import { type CommandDeps, handleCommand } from '../commands/handle-command.ts';
import type { EndpointFacts } from '../domain/endpoint/state.ts';
import { webhookDecider } from '../domain/webhook/decide.ts';
import { webhookStream } from '../domain/webhook/events.ts';
import type { Position } from '../eventstore/port.ts';
import { newId } from '../ids.ts';
import { mintSigningSecret } from './signing.ts';

export interface CreatedWebhook {
  readonly webhookId: string;
  /** The ingest URL's secret part and the signing secret: shown once, never stored in the clear. */
  readonly token: string;
  readonly secret: string;
  readonly required: boolean;
  readonly position: Position;
}

/**
 * A webhook owned by `owner`, with its own Standard Webhooks signing secret (sealed before it is
 * recorded), in one append: a webhook never exists without its signing rule.
 */
export async function createSignedWebhook(
  deps: CommandDeps & { readonly seal: (secret: string, webhookId: string) => string },
  input: {
    readonly owner: EndpointFacts;
    readonly human: string;
    readonly name: string;
    readonly queue: string;
    readonly requireSignature: boolean;
  },
): Promise<CreatedWebhook> {
  const webhookId = newId('wh');
  const token = mintIngestToken();
  const secret = mintSigningSecret();
  const created = await handleCommand(
    deps,
    webhookStream(webhookId),
    webhookDecider,
    {
      type: 'CreateWebhook',
      webhookId,
      endpointId: input.owner.id,
      operator: input.owner.operator,
      human: input.human,
      name: input.name,
      queue: input.queue,
      tokenHash: hashCredential(token),
      signing: { secretSealed: deps.seal(secret, webhookId), required: input.requireSignature },
    },
    { newStream: true, retries: 0 },
  );
  return { webhookId, token, secret, required: input.requireSignature, position: created.position! };
}
