import { type CommandDeps, handleCommand } from '../commands/handle-command.ts';
import { agentDecider, agentNameDecider } from '../domain/agent/decide.ts';
import { agentStream } from '../domain/agent/events.ts';
import { isWrongExpectedVersion } from '../eventstore/port.ts';
import { newId, sha256Hex } from '../ids.ts';

export interface EnsuredAgent {
  readonly agentId: string;
  readonly name: string;
  /** False when an agent of that name already existed for the operator and is reused. */
  readonly created: boolean;
}

/** The operator and name are hashed so the stream id stays short and free of the name's characters. */
export const agentNameStream = (operator: string, name: string): string =>
  `agent-name-${sha256Hex(`${operator}\n${name}`)}`;

const MAX_ATTEMPTS = 8;

/**
 * One agent per (operator, name): the pair is reserved first, then the agent registered. A process
 * that died between the two leaves a reservation without an agent; the next vend under that name
 * registers it.
 */
export async function ensureAgent(
  deps: CommandDeps,
  input: { readonly operator: string; readonly name: string },
): Promise<EnsuredAgent> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const reserved = await handleCommand(
      deps,
      agentNameStream(input.operator, input.name),
      agentNameDecider,
      {
        type: 'ReserveAgentName',
        agentId: newId('ag'),
        operator: input.operator,
        name: input.name,
      },
    );
    const agentId = reserved.state.agentId;
    if (agentId === null) continue;
    try {
      const registered = await handleCommand(
        deps,
        agentStream(agentId),
        agentDecider,
        { type: 'RegisterAgent', agentId, operator: input.operator, name: input.name, description: null },
        { retries: 0 },
      );
      return { agentId, name: input.name, created: registered.events.length > 0 };
    } catch (err) {
      if (!isWrongExpectedVersion(err)) throw err;
    }
  }
  throw new Error(`could not register agent ${JSON.stringify(input.name)}: too much contention`);
}
