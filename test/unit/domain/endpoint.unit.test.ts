import { describe, expect, it } from 'vitest';
import { decideRevoke, decideVend, type VendEndpoint } from '../../../src/domain/endpoint/decide.ts';
import type { EndpointEvent } from '../../../src/domain/endpoint/events.ts';
import {
  type EndpointState,
  evolveEndpoint,
  initialEndpointState,
} from '../../../src/domain/endpoint/state.ts';
import { ALL_VERBS, normalizeVerbs } from '../../../src/domain/endpoint/verbs.ts';
import { HooklineError } from '../../../src/errors.ts';

const now = new Date('2026-11-22T10:00:00.000Z');
const given = (events: EndpointEvent[]): EndpointState => events.reduce(evolveEndpoint, initialEndpointState);

const vend: VendEndpoint = {
  endpointId: 'ep_aaaaaaaaaaaaaaaaaaaa',
  slug: 'triage-bot-abcdef',
  agentId: 'ag_aaaaaaaaaaaaaaaaaaaa',
  agentName: 'Triage Bot',
  operator: 'admin',
  human: 'admin',
  queue: 'inbox',
  verbs: ['list_todos', 'claim'],
  tokenHash: 'a'.repeat(64),
  webhookId: 'wh_aaaaaaaaaaaaaaaaaaaa',
  replayTargets: ['https://example.com/hook'],
  expiresAt: null,
};

const vended = (): EndpointEvent[] => decideVend(vend, initialEndpointState, now);

function refusal(fn: () => unknown): HooklineError {
  try {
    fn();
  } catch (err) {
    if (err instanceof HooklineError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('endpoint: vend', () => {
  it('given nothing, when vended, then EndpointVended carries the scope, the hash and no credential', () => {
    const events = vended();
    expect(events).toEqual([
      {
        type: 'EndpointVended',
        data: {
          endpoint_id: vend.endpointId,
          slug: vend.slug,
          agent_id: vend.agentId,
          agent_name: 'Triage Bot',
          operator: 'admin',
          queues: ['inbox'],
          verbs: ['list_todos', 'claim'],
          token_hash: 'a'.repeat(64),
          webhook_id: vend.webhookId,
          replay_targets: ['https://example.com/hook'],
          expires_at: null,
          vended_by: 'admin',
          vended_at: now.toISOString(),
        },
      },
    ]);
  });

  it('refuses the reserved quarantine queue and malformed queue names with 400', () => {
    expect(
      refusal(() => decideVend({ ...vend, queue: 'quarantine' }, initialEndpointState, now)).status,
    ).toBe(400);
    expect(refusal(() => decideVend({ ...vend, queue: 'Inbox' }, initialEndpointState, now)).status).toBe(
      400,
    );
    expect(refusal(() => decideVend({ ...vend, queue: '' }, initialEndpointState, now)).status).toBe(400);
  });

  it('refuses an expiry in the past and an empty verb list', () => {
    const past = new Date(now.getTime() - 1000);
    expect(refusal(() => decideVend({ ...vend, expiresAt: past }, initialEndpointState, now)).code).toBe(
      'bad_request',
    );
    expect(refusal(() => decideVend({ ...vend, verbs: [] }, initialEndpointState, now)).code).toBe(
      'bad_request',
    );
  });

  it('given a vended endpoint, when vended again under the same id, then it conflicts', () => {
    expect(refusal(() => decideVend(vend, given(vended()), now)).code).toBe('conflict');
  });

  it('normalizes verbs into allowlist order without duplicates', () => {
    expect(normalizeVerbs(['claim', 'list_todos', 'claim'])).toEqual(['list_todos', 'claim']);
    expect(normalizeVerbs([...ALL_VERBS].reverse())).toEqual([...ALL_VERBS]);
  });
});

describe('endpoint: revoke', () => {
  it('given an active endpoint, when its owner revokes, then EndpointRevoked and state revoked', () => {
    const events = decideRevoke({ operator: 'admin', human: 'alice' }, given(vended()), now);
    expect(events).toEqual([
      {
        type: 'EndpointRevoked',
        data: { endpoint_id: vend.endpointId, revoked_by: 'alice', revoked_at: now.toISOString() },
      },
    ]);
    expect(given([...vended(), ...events]).status).toBe('revoked');
  });

  it('given a revoked endpoint, when revoked again, then nothing happens', () => {
    const revoked = [
      ...vended(),
      ...decideRevoke({ operator: 'admin', human: 'admin' }, given(vended()), now),
    ];
    expect(decideRevoke({ operator: 'admin', human: 'admin' }, given(revoked), now)).toEqual([]);
  });

  it('another operator and an unknown endpoint both hear not found', () => {
    expect(
      refusal(() => decideRevoke({ operator: 'mallory', human: 'mallory' }, given(vended()), now)).status,
    ).toBe(404);
    expect(
      refusal(() => decideRevoke({ operator: 'admin', human: 'admin' }, initialEndpointState, now)).status,
    ).toBe(404);
  });
});
