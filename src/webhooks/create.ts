import { hashCredential, mintIngestToken } from '../auth/credentials.ts';
import { type CommandDeps, handleCommand } from '../commands/handle-command.ts';
import type { EndpointFacts } from '../domain/endpoint/state.ts';
import { webhookDecider } from '../domain/webhook/decide.ts';
import { recordedScheme, type WebhookScheme, webhookStream } from '../domain/webhook/events.ts';
import { HooklineError } from '../errors.ts';
import type { Position } from '../eventstore/port.ts';
import { newId } from '../ids.ts';
import { checkSuppliedSecret, mintSigningSecret } from './signing.ts';

export interface CreatedWebhook {
  readonly webhookId: string;
  /** The ingest URL's secret part and the signing secret: shown once, never stored in the clear. */
  readonly token: string;
  /** null for the scheme `none`. */
  readonly secret: string | null;
  readonly scheme: WebhookScheme;
  readonly required: boolean;
  readonly position: Position;
}

export interface SigningChoice {
  readonly scheme: WebhookScheme;
  /** The caller's own secret (the sender made it); absent: one is minted. */
  readonly secret?: string | undefined;
  /** Standard Webhooks only: false lets unsigned deliveries in, unverified. */
  readonly requireSignature?: boolean | undefined;
}

/**
 * The signing rule of a new webhook, checked before anything is written: the recorded scheme, the
 * secret in the clear (shown once) and whether a signature is required; null for `none`.
 */
export function chooseSigning(choice: SigningChoice): {
  readonly scheme: ReturnType<typeof recordedScheme>;
  readonly secret: string;
  readonly required: boolean;
} | null {
  if (choice.scheme === 'none') {
    if (choice.secret !== undefined) {
      throw new HooklineError('bad_request', 'the scheme none takes no secret: the URL is the credential', {
        field: 'secret',
      });
    }
    return null;
  }
  const scheme = recordedScheme(choice.scheme);
  if (choice.requireSignature === false && scheme !== 'standard-webhooks') {
    throw new HooklineError(
      'bad_request',
      `require_signature: false applies to the standard scheme only; ${choice.scheme} always checks (use the scheme none for no check)`,
      { field: 'require_signature' },
    );
  }
  if (choice.secret !== undefined) checkSuppliedSecret(scheme, choice.secret);
  return {
    scheme,
    secret: choice.secret ?? mintSigningSecret(scheme),
    required: choice.requireSignature ?? true,
  };
}

/**
 * A webhook owned by `owner`, with its signing secret (sealed before it is recorded) in the same
 * append: a signed webhook never exists without its signing rule.
 */
export async function createSignedWebhook(
  deps: CommandDeps & { readonly seal: (secret: string, webhookId: string) => string },
  input: {
    readonly owner: EndpointFacts;
    readonly human: string;
    readonly name: string;
    readonly queue: string;
    readonly signing: SigningChoice;
  },
): Promise<CreatedWebhook> {
  const signing = chooseSigning(input.signing);
  const webhookId = newId('wh');
  const token = mintIngestToken();
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
      ...(signing
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
  return {
    webhookId,
    token,
    secret: signing?.secret ?? null,
    scheme: input.signing.scheme,
    required: signing?.required ?? false,
    position: created.position!,
  };
}
