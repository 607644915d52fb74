import { describe, expect, it } from 'vitest';
import {
  endpointDecider,
  endpointSlugDecider,
  type VendEndpoint,
} from '../../../src/domain/endpoint/decide.ts';
import type { EndpointEvent } from '../../../src/domain/endpoint/events.ts';
import { ALL_VERBS, normalizeVerbs } from '../../../src/domain/endpoint/verbs.ts';
import { errorCatalog } from '../../../src/errors.ts';
import { deciderSpec } from '../../support/decider-spec.ts';

const now = new Date('2026-11-22T10:00:00.000Z');
const spec = deciderSpec(endpointDecider, now);

const vend: VendEndpoint = {
  type: 'VendEndpoint',
  endpointId: 'ep_aaaaaaaaaaaaaaaaaaaa',
  slug: 'triage-bot-abcdef',
  agentId: 'ag_aaaaaaaaaaaaaaaaaaaa',
  agentName: 'Triage Bot',
  operator: 'admin',
  human: 'admin',
  queues: ['inbox'],
  verbs: ['list_todos', 'claim'],
  tokenHash: 'a'.repeat(64),
  webhookId: 'wh_aaaaaaaaaaaaaaaaaaaa',
  replayTargets: ['https://example.com/hook'],
  expiresAt: null,
};

const vended: EndpointEvent = {
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
};

const revoked = (by: string): EndpointEvent => ({
  type: 'EndpointRevoked',
  data: { endpoint_id: vend.endpointId, revoked_by: by, revoked_at: now.toISOString() },
});

const status = (code: keyof typeof errorCatalog) => errorCatalog[code].status;

describe('endpoint: vend', () => {
  it('given nothing, when vended, then EndpointVended carries the scope, the hash and no credential', () => {
    spec.given().when(vend).thenEvents([vended]);
  });

  it('refuses the reserved quarantine queue and malformed queue names with 400', () => {
    for (const queue of ['quarantine', 'Inbox', '']) {
      const refused = spec
        .given()
        .when({ ...vend, queues: [queue] })
        .thenThrows('bad_request');
      expect(status(refused.code)).toBe(400);
      expect(refused.extensions.field).toBe('queue');
    }
  });

  it('refuses an expiry in the past and an empty verb list', () => {
    const past = new Date(now.getTime() - 1000);
    spec
      .given()
      .when({ ...vend, expiresAt: past })
      .thenThrows('bad_request', /future/);
    spec
      .given()
      .when({ ...vend, verbs: [] })
      .thenThrows('bad_request', /verb/);
  });

  it('given a vended endpoint, when vended again under the same id, then it conflicts', () => {
    spec.given(vended).when(vend).thenThrows('conflict');
  });

  it('normalizes verbs into allowlist order without duplicates', () => {
    expect(normalizeVerbs(['claim', 'list_todos', 'claim'])).toEqual(['list_todos', 'claim']);
    expect(normalizeVerbs([...ALL_VERBS].reverse())).toEqual([...ALL_VERBS]);
  });
});

describe('endpoint: revoke', () => {
  const revoke = { type: 'RevokeEndpoint', operator: 'admin', human: 'alice' } as const;

  it('given an active endpoint, when its owner revokes, then EndpointRevoked and state revoked', () => {
    spec
      .given(vended)
      .when(revoke)
      .thenEvents([revoked('alice')]);
    expect(spec.given(vended).when(revoke).stateAfter().status).toBe('revoked');
  });

  it('given a revoked endpoint, when revoked again, then nothing happens', () => {
    spec.given(vended, revoked('admin')).when(revoke).thenNothing();
  });

  it('another operator and an unknown endpoint both hear not found', () => {
    const foreign = spec
      .given(vended)
      .when({ ...revoke, operator: 'mallory' })
      .thenThrows('not_found');
    const unknown = spec.given().when(revoke).thenThrows('not_found');
    expect(status(foreign.code)).toBe(404);
    expect(foreign.message).toBe(unknown.message);
  });
});

describe('endpoint slug reservation', () => {
  const slugs = deciderSpec(endpointSlugDecider, now);
  const reserve = { type: 'ReserveSlug', endpointId: 'ep_2', slug: 'bot-abcdef' } as const;

  it('given a free slug, when reserved, then it names the endpoint; given a held one, a conflict', () => {
    const reserved = slugs.given().when(reserve).events();
    expect(reserved).toEqual([
      { type: 'EndpointSlugReserved', data: { endpoint_id: 'ep_2', slug: 'bot-abcdef' } },
    ]);
    slugs
      .given(...(reserved as never[]))
      .when({ ...reserve, endpointId: 'ep_3' })
      .thenThrows('conflict');
  });
});
