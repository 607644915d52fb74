import { type CommandDeps, handleCommand } from '../commands/handle-command.ts';
import { assertOwner, type RoutingCaller, webhookDecider } from '../domain/webhook/decide.ts';
import { namedScheme, type WebhookScheme, webhookStream } from '../domain/webhook/events.ts';
import { HooklineError } from '../errors.ts';
import { loadWebhook } from './load.ts';
import { checkSuppliedSecret, mintSigningSecret } from './signing.ts';

/** How long the previous secret keeps verifying when the caller does not say (24 h). */
export const DEFAULT_OVERLAP_S = 86_400;

export interface Rotated {
  readonly webhookId: string;
  readonly scheme: WebhookScheme;
  /** The new secret, shown once; null when the rotation was only ended. */
  readonly secret: string | null;
  /** Until when the previous secret verifies; null when none does. */
  readonly previousExpiresAt: Date | null;
}

/**
 * rotate_webhook_secret: a new secret (minted, or the caller's) verifies at once, and the one it
 * replaces keeps verifying for `overlapSeconds` (0: not at all), so the sender can be switched
 * over without a failed delivery; `retire` ends a running rotation early.
 */
export async function rotateWebhookSecret(
  deps: CommandDeps & { readonly seal: (secret: string, webhookId: string) => string },
  input: {
    readonly caller: RoutingCaller;
    readonly webhookId: string;
    readonly secret?: string | undefined;
    readonly overlapSeconds?: number | undefined;
    readonly retire?: boolean | undefined;
  },
): Promise<Rotated> {
  const { state } = await loadWebhook(deps.store, input.webhookId);
  assertOwner(state, input.caller); // a webhook of another endpoint is not_found before anything else
  const recorded = state.signing?.scheme ?? null;
  if (input.retire) {
    if (input.secret !== undefined || input.overlapSeconds !== undefined) {
      throw new HooklineError(
        'bad_request',
        'retire_previous takes neither secret nor previous_valid_seconds',
      );
    }
    await handleCommand(
      deps,
      webhookStream(input.webhookId),
      webhookDecider,
      { type: 'ChangeSecret', caller: input.caller, change: { kind: 'retire' } },
      { retries: 3 },
    );
    return {
      webhookId: input.webhookId,
      scheme: namedScheme(recorded),
      secret: null,
      previousExpiresAt: null,
    };
  }
  // Judged on the state read; the decider checks the owner and the scheme again on append.
  if (recorded !== null && input.secret !== undefined) checkSuppliedSecret(recorded, input.secret);
  const secret = input.secret ?? (recorded ? mintSigningSecret(recorded) : '');
  const previousExpiresAt = new Date(
    deps.clock.now().getTime() + (input.overlapSeconds ?? DEFAULT_OVERLAP_S) * 1000,
  );
  await handleCommand(
    deps,
    webhookStream(input.webhookId),
    webhookDecider,
    {
      type: 'ChangeSecret',
      caller: input.caller,
      change: { kind: 'rotate', secretSealed: deps.seal(secret, input.webhookId), previousExpiresAt },
    },
    { retries: 3 },
  );
  return {
    webhookId: input.webhookId,
    scheme: namedScheme(recorded),
    secret,
    previousExpiresAt: input.overlapSeconds === 0 ? null : previousExpiresAt,
  };
}
