import { HooklineError } from '../../errors.ts';
import type { WebhookEvent } from './events.ts';

export const webhookStream = (webhookId: string): string => `webhook-${webhookId}`;

/** Path of an endpoint webhook's ingest URL, `{base_url}/webhooks/w/<token>` (release 0.3.0). */
export const ingestUrl = (baseUrl: string, token: string): string => `${baseUrl}/webhooks/w/${token}`;

export type WebhookState =
  | { readonly status: 'none' }
  | {
      readonly status: 'active';
      readonly id: string;
      readonly endpointId: string;
      readonly operator: string;
      readonly name: string;
      readonly queue: string;
      readonly trustMode: 'token';
      readonly tokenHash: string;
    };

export const initialWebhookState: WebhookState = { status: 'none' };

export function evolveWebhook(_state: WebhookState, event: WebhookEvent): WebhookState {
  switch (event.type) {
    case 'WebhookCreated': {
      const d = event.data;
      return {
        status: 'active',
        id: d.webhook_id,
        endpointId: d.endpoint_id,
        operator: d.operator,
        name: d.name,
        queue: d.queue,
        trustMode: d.trust_mode,
        tokenHash: d.token_hash,
      };
    }
    default: {
      const never: never = event.type;
      return never;
    }
  }
}

export interface CreateTokenWebhook {
  readonly webhookId: string;
  readonly endpointId: string;
  readonly operator: string;
  readonly human: string;
  readonly name: string;
  readonly queue: string;
  readonly tokenHash: string;
}

/** The webhook vended with an endpoint: token trust, routed to the endpoint's queue. */
export function decideCreateTokenWebhook(
  command: CreateTokenWebhook,
  state: WebhookState,
  now: Date,
): WebhookEvent[] {
  if (state.status !== 'none') throw new HooklineError('conflict', `webhook ${command.webhookId} exists`);
  if (!/^[0-9a-f]{64}$/.test(command.tokenHash)) throw new Error('token hash must be SHA-256 hex');
  return [
    {
      type: 'WebhookCreated',
      data: {
        webhook_id: command.webhookId,
        endpoint_id: command.endpointId,
        operator: command.operator,
        name: command.name,
        queue: command.queue,
        trust_mode: 'token',
        token_hash: command.tokenHash,
        created_by: command.human,
        created_at: now.toISOString(),
      },
    },
  ];
}
