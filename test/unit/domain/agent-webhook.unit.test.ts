import { describe, expect, it } from 'vitest';
import { decideRegisterAgent, evolveAgent, initialAgentState } from '../../../src/domain/agent/decide.ts';
import { agentNameSchema, kebab } from '../../../src/domain/agent/name.ts';
import { decideCreateTokenWebhook, initialWebhookState } from '../../../src/domain/webhook/decide.ts';

const now = new Date('2026-11-22T10:00:00.000Z');

describe('agent', () => {
  it('given nothing, when registered, then AgentRegistered; given registered, then nothing', () => {
    const command = { agentId: 'ag_x', operator: 'admin', name: 'Triage Bot', description: null };
    const events = decideRegisterAgent(command, initialAgentState, now);
    expect(events).toEqual([
      {
        type: 'AgentRegistered',
        data: {
          agent_id: 'ag_x',
          operator: 'admin',
          name: 'Triage Bot',
          description: null,
          registered_at: now.toISOString(),
        },
      },
    ]);
    expect(decideRegisterAgent(command, events.reduce(evolveAgent, initialAgentState), now)).toEqual([]);
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

describe('webhook vended with an endpoint', () => {
  it('given nothing, when created, then WebhookCreated with token trust and only the hash', () => {
    const events = decideCreateTokenWebhook(
      {
        webhookId: 'wh_x',
        endpointId: 'ep_x',
        operator: 'admin',
        human: 'admin',
        name: 'bot-abcdef',
        queue: 'inbox',
        tokenHash: 'c'.repeat(64),
      },
      initialWebhookState,
      now,
    );
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toMatchObject({
      trust_mode: 'token',
      token_hash: 'c'.repeat(64),
      queue: 'inbox',
    });
  });

  it('refuses anything but a SHA-256 hex as the stored token', () => {
    expect(() =>
      decideCreateTokenWebhook(
        {
          webhookId: 'wh_x',
          endpointId: 'ep_x',
          operator: 'a',
          human: 'a',
          name: 'n',
          queue: 'inbox',
          tokenHash: 'plain',
        },
        initialWebhookState,
        now,
      ),
    ).toThrow();
  });
});
