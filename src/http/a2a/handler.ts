import type {
  AgentCard,
  Message,
  MessageSendParams,
  Task,
  TaskArtifactUpdateEvent,
  TaskIdParams,
  TaskPushNotificationConfig,
  TaskQueryParams,
  TaskStatusUpdateEvent,
} from '@a2a-js/sdk';
import { A2AError, type A2ARequestHandler } from '@a2a-js/sdk/server';
import { z } from 'zod';
import { DomainError } from '../../domain/errors.ts';
import { asHooklineError } from '../../errors.ts';
import { type FriendDeps, requestFriend, withdrawFriend } from '../../friends/edges.ts';
import { type FriendTaskStore, taskOf } from './task-store.ts';

/** The data part of a friend request (the card's skill describes it). Unknown keys are ignored. */
const FriendRequestData = z.object({
  name: z.string().max(100),
  description: z.string().max(1000).nullish(),
  card_url: z.string().max(2048).nullish(),
  verbs: z.array(z.string().max(64)).max(64),
  queue: z.string().max(64),
  message: z.string().max(2000).nullish(),
});

/** A request the domain refused (spec 7's 400 for only ungrantable verbs, a reserved queue, …). */
export class RefusedRequest extends A2AError {}

/**
 * The A2A side of one approver endpoint: message/send records a friend request and answers its
 * task (input-required, awaiting the owner); tasks/get reads the task from the log (through the
 * task store); tasks/cancel withdraws a pending request. Streaming, resubscription and push
 * notifications are not offered (the card says so).
 */
export class FriendRequestHandler implements A2ARequestHandler {
  private readonly card: AgentCard;
  private readonly tasks: FriendTaskStore;
  private readonly deps: FriendDeps & { readonly baseUrl: string };
  private readonly slug: string;
  private readonly sourceIp: string | null;

  constructor(options: {
    readonly card: AgentCard;
    readonly tasks: FriendTaskStore;
    readonly deps: FriendDeps & { readonly baseUrl: string };
    readonly slug: string;
    readonly sourceIp: string | null;
  }) {
    this.card = options.card;
    this.tasks = options.tasks;
    this.deps = options.deps;
    this.slug = options.slug;
    this.sourceIp = options.sourceIp;
  }

  async getAgentCard(): Promise<AgentCard> {
    return this.card;
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw A2AError.authenticatedExtendedCardNotConfigured();
  }

  async sendMessage(params: MessageSendParams): Promise<Message | Task> {
    const message = params.message;
    if (message.taskId) {
      throw A2AError.invalidRequest(
        'a friend request task takes no further messages; follow it with tasks/get',
      );
    }
    const part = message.parts.find((p) => p.kind === 'data');
    if (part?.kind !== 'data') {
      throw new RefusedRequest(
        -32602,
        'send the friend request as a data part: {"name", "verbs", "queue", …}',
      );
    }
    const parsed = FriendRequestData.safeParse(part.data);
    if (!parsed.success) {
      throw new RefusedRequest(-32602, `invalid friend request: ${z.prettifyError(parsed.error)}`);
    }
    const d = parsed.data;
    const text = message.parts
      .filter((p) => p.kind === 'text')
      .map((p) => (p.kind === 'text' ? p.text : ''))
      .join('\n');
    try {
      const { state } = await requestFriend(this.deps, {
        approverSlug: this.slug,
        requester: {
          name: d.name,
          description: d.description ?? null,
          cardUrl: d.card_url ?? null,
          endpointId: null,
          operator: null,
        },
        verbs: d.verbs,
        queue: d.queue,
        message: d.message ?? (text.length > 0 ? text.slice(0, 2000) : null),
        via: 'a2a',
        sourceIp: this.sourceIp,
        by: `a2a${this.sourceIp ? ` from ${this.sourceIp}` : ''}`,
      });
      if (state.status === 'none') throw A2AError.internalError('the request was not recorded');
      return taskOf(this.deps.baseUrl, state, null, this.deps.clock.now());
    } catch (err) {
      throw refusal(err);
    }
  }

  // biome-ignore lint/correctness/useYield: streaming is not offered; the card says so
  async *sendMessageStream(): AsyncGenerator<
    Message | Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent
  > {
    throw A2AError.unsupportedOperation('message/stream');
  }

  async getTask(params: TaskQueryParams): Promise<Task> {
    const task = await this.tasks.load(params.id);
    if (!task) throw A2AError.taskNotFound(params.id);
    return task;
  }

  async cancelTask(params: TaskIdParams): Promise<Task> {
    const task = await this.tasks.load(params.id);
    if (!task) throw A2AError.taskNotFound(params.id);
    if (task.status.state !== 'input-required') throw A2AError.taskNotCancelable(params.id);
    try {
      await withdrawFriend(this.deps, {
        friendRef: params.id,
        actor: { kind: 'task', label: 'a2a task holder' },
      });
    } catch (err) {
      const known = asHooklineError(err);
      if (known?.code === 'conflict') throw A2AError.taskNotCancelable(params.id);
      throw err;
    }
    const after = await this.tasks.load(params.id);
    if (!after) throw A2AError.taskNotFound(params.id);
    return after;
  }

  async setTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    throw A2AError.pushNotificationNotSupported();
  }

  async getTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    throw A2AError.pushNotificationNotSupported();
  }

  async listTaskPushNotificationConfigs(): Promise<TaskPushNotificationConfig[]> {
    throw A2AError.pushNotificationNotSupported();
  }

  async deleteTaskPushNotificationConfig(): Promise<void> {
    throw A2AError.pushNotificationNotSupported();
  }

  // biome-ignore lint/correctness/useYield: resubscription is not offered; the card says so
  async *resubscribe(): AsyncGenerator<Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent> {
    throw A2AError.unsupportedOperation('tasks/resubscribe');
  }
}

/** A domain refusal (bad request, not found) as an invalid-params error the plugin answers with 400. */
function refusal(err: unknown): unknown {
  if (err instanceof A2AError) return err;
  const known = asHooklineError(err);
  if (err instanceof DomainError || (known && known.status < 500)) {
    const message = known?.message ?? (err as Error).message;
    return new RefusedRequest(-32602, message, { code: known?.code ?? 'bad_request' });
  }
  return err;
}
