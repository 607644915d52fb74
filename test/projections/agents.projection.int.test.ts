import { beforeEach, describe, expect, it } from 'vitest';
import { agentsProjection } from '../../projections/agents.projection.ts';
import { listAgents } from '../../projections/agents.queries.ts';
import { projectionSpec, recorded, resetStreams } from '../support/projection-spec.ts';
import { postgresAvailable } from '../support/services.ts';

const at = '2026-11-22T10:00:00.000Z';
const registered = (id: string, operator: string, name: string) =>
  recorded(`agent-${id}`, {
    type: 'AgentRegistered',
    data: { agent_id: id, operator, name, description: null, registered_at: at },
  });

describe.runIf(await postgresAvailable())('agents read model: given events, then rows', () => {
  const spec = projectionSpec(agentsProjection);
  beforeEach(resetStreams);

  it('one row per registered agent, listed per operator', async () => {
    await spec
      .given(registered('ag_1', 'admin', 'Triage Bot'), registered('ag_2', 'other', 'x'))
      .thenRows(async (db) => {
        expect(await listAgents(db, 'admin')).toEqual([
          { id: 'ag_1', operator: 'admin', name: 'Triage Bot', description: null, created_at: new Date(at) },
        ]);
      });
  });

  it('ignores the name reservations of the same category', async () => {
    await spec
      .given(
        recorded('agent-name-abc', {
          type: 'AgentNameReserved',
          data: { agent_id: 'ag_1', operator: 'admin', name: 'bot' },
        }),
      )
      .thenRows(async (db) => {
        expect(await listAgents(db, 'admin')).toEqual([]);
      });
  });
});
