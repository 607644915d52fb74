import { describe, expect, it } from 'vitest';
import { agentDecider, agentNameDecider, type RegisterAgent } from '../../../src/domain/agent/decide.ts';
import type { AgentEvent, AgentNameEvent } from '../../../src/domain/agent/events.ts';
import { agentNameSchema, kebab } from '../../../src/domain/agent/name.ts';
import { deciderSpec } from '../../support/decider-spec.ts';

const now = new Date('2026-11-22T10:00:00.000Z');

describe('agent', () => {
  const spec = deciderSpec(agentDecider, now);
  const register: RegisterAgent = {
    type: 'RegisterAgent',
    agentId: 'ag_x',
    operator: 'admin',
    name: 'Triage Bot',
    description: null,
  };
  const registered: AgentEvent = {
    type: 'AgentRegistered',
    data: {
      agent_id: 'ag_x',
      operator: 'admin',
      name: 'Triage Bot',
      description: null,
      registered_at: now.toISOString(),
    },
  };

  it('given nothing, when registered, then AgentRegistered; given registered, then nothing', () => {
    spec.given().when(register).thenEvents([registered]);
    spec.given(registered).when(register).thenNothing();
  });

  it('kebab-cases names for slugs', () => {
    expect(kebab('Triage Bot')).toBe('triage-bot');
    expect(kebab('  Ünïcödé -- Agent!! ')).toBe('unicode-agent');
    expect(kebab('日本語')).toBe('agent');
    expect(kebab('x'.repeat(60))).toHaveLength(40);
  });

  it('names are one line, 1 to 100 characters', () => {
    expect(agentNameSchema.safeParse('Triage Bot').success).toBe(true);
    expect(agentNameSchema.safeParse('  ').success).toBe(false);
    expect(agentNameSchema.safeParse('a\nb').success).toBe(false);
    expect(agentNameSchema.safeParse('a'.repeat(101)).success).toBe(false);
  });
});

describe('agent name reservation', () => {
  const spec = deciderSpec(agentNameDecider, now);
  const reserve = { type: 'ReserveAgentName', agentId: 'ag_2', operator: 'admin', name: 'bot' } as const;
  const held: AgentNameEvent = {
    type: 'AgentNameReserved',
    data: { agent_id: 'ag_1', operator: 'admin', name: 'bot' },
  };

  it('given a free name, when reserved, then it names the new agent', () => {
    spec
      .given()
      .when(reserve)
      .thenEvents([
        { type: 'AgentNameReserved', data: { agent_id: 'ag_2', operator: 'admin', name: 'bot' } },
      ]);
  });

  it('given a held name, when reserved again, then nothing, and the first agent keeps it', () => {
    spec.given(held).when(reserve).thenNothing();
    expect(spec.given(held).when(reserve).stateAfter()).toEqual({ agentId: 'ag_1' });
  });
});
