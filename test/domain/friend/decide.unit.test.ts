import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type EndpointCommand, endpointDecider } from '../../../src/domain/endpoint/decide.ts';
import type { EndpointEvent } from '../../../src/domain/endpoint/events.ts';
import type { EndpointState } from '../../../src/domain/endpoint/state.ts';
import { ALL_VERBS } from '../../../src/domain/endpoint/verbs.ts';
import { DomainError } from '../../../src/domain/errors.ts';
import {
  type FriendCommand,
  friendDecider,
  RequestExpired,
  type RequestFriend,
} from '../../../src/domain/friend/decide.ts';
import type { FriendEvent } from '../../../src/domain/friend/events.ts';
import { FRIEND_GRANTABLE } from '../../../src/domain/friend/grant.ts';
import type { FriendState } from '../../../src/domain/friend/state.ts';
import { deciderSpec } from '../../support/decider-spec.ts';

const now = new Date('2026-11-25T10:00:00.000Z');
const later = (ms: number) => new Date(now.getTime() + ms);
const spec = deciderSpec(friendDecider, now);
const DAY = 24 * 60 * 60 * 1000;

const request: RequestFriend = {
  type: 'RequestFriend',
  friendId: 'fr_aaaaaaaaaaaaaaaaaaaa',
  approver: { endpointId: 'ep_aaaaaaaaaaaaaaaaaaaa', slug: 'triage-abcdef', operator: 'alice', active: true },
  requester: {
    name: 'Build Bot',
    description: 'builds things',
    cardUrl: 'https://bots.example/card',
    endpointId: null,
    operator: null,
  },
  verbs: ['create_for', 'claim_next', 'complete', 'create_webhook'],
  queue: 'handback',
  message: 'hello <b>there</b>',
  via: 'a2a',
  sourceIp: '203.0.113.9',
  by: 'a2a:203.0.113.9',
  ttlMs: 14 * DAY,
};

const requested = spec.given().when(request).events()[0] as FriendEvent;

const approve = (verbs: string[], operator = 'alice'): FriendCommand => ({
  type: 'ApproveFriend',
  operator,
  human: operator,
  verbs,
  friendEndpointId: 'ep_bbbbbbbbbbbbbbbbbbbb',
  friendSlug: 'build-bot-ghijkl',
  approverQueue: 'inbox',
  credentialSealed: 'v1.sealed',
});
const approved = spec
  .given(requested)
  .when(approve(['create_for', 'claim_next', 'complete']))
  .events()[0] as FriendEvent;
const op = (operator: string) => ({ operator, human: operator });

describe('a friend request', () => {
  it('is recorded with every verb it names, the ungrantable ones only as requested', () => {
    expect(requested).toMatchObject({
      type: 'FriendRequested',
      data: {
        requested_verbs: ['create_for', 'claim_next', 'complete', 'create_webhook'],
        queue: 'handback',
        message: 'hello <b>there</b>',
        expires_at: later(14 * DAY).toISOString(),
      },
    });
  });

  it('naming only verbs a friend can never be granted is refused (spec 7), so nothing is stored', () => {
    spec
      .given()
      .when({ ...request, verbs: ['create_webhook', 'set_webhook_rules'] })
      .thenThrows('bad_request', /never be granted/);
  });

  it('refuses quarantine as the friend queue (release 0.4.0 item 7)', () => {
    spec
      .given()
      .when({ ...request, queue: 'quarantine' })
      .thenThrows('bad_request', /quarantine/);
  });

  it('refuses a revoked approver endpoint as not found', () => {
    spec
      .given()
      .when({ ...request, approver: { ...request.approver, active: false } })
      .thenThrows('not_found');
  });

  it('refuses a multi-line name and an endpoint befriending itself', () => {
    spec
      .given()
      .when({ ...request, requester: { ...request.requester, name: 'a\nb' } })
      .thenThrows('bad_request');
    spec
      .given()
      .when({
        ...request,
        via: 'local',
        requester: { ...request.requester, endpointId: request.approver.endpointId, operator: 'alice' },
      })
      .thenThrows('bad_request', /itself/);
  });

  it('refuses a NUL character in its multi-line description or message (PostgreSQL text refuses it)', () => {
    spec
      .given()
      .when({ ...request, message: 'hi\u0000there' })
      .thenThrows('bad_request', /message must not contain a NUL/);
    spec
      .given()
      .when({ ...request, requester: { ...request.requester, description: 'x\u0000' } })
      .thenThrows('bad_request', /description must not contain a NUL/);
    // Other control characters stay allowed there.
    expect(
      spec
        .given()
        .when({ ...request, message: 'line one\nline two\ttab' })
        .events(),
    ).toHaveLength(1);
  });
});

describe('approval', () => {
  it('grants a subset of the grantable verbs requested, in a fixed order', () => {
    const events = spec
      .given(requested)
      .when(approve(['complete', 'create_for']))
      .events();
    expect(events[0]).toMatchObject({
      type: 'FriendApproved',
      data: { granted_verbs: ['create_for', 'complete'] },
    });
  });

  it('cannot grant a verb that was requested but is not grantable, nor one never requested', () => {
    spec
      .given(requested)
      .when(approve(['create_webhook']))
      .thenThrows('bad_request');
    spec
      .given(requested)
      .when(approve(['heartbeat']))
      .thenThrows('bad_request');
    spec.given(requested).when(approve([])).thenThrows('bad_request');
  });

  it('is the approver owner’s alone: anyone else hears not found', () => {
    spec
      .given(requested)
      .when(approve(['create_for'], 'mallory'))
      .thenThrows('not_found');
  });

  it('refuses an expired request, and ExpireFriend records the expiry once due', () => {
    spec
      .given(requested)
      .when(approve(['create_for']), later(15 * DAY))
      .thenThrows('conflict', /expired/);
    spec.given(requested).when({ type: 'ExpireFriend' }).thenNothing();
    spec
      .given(requested)
      .when({ type: 'ExpireFriend' }, later(14 * DAY))
      .thenEvents([
        {
          type: 'FriendExpired',
          data: { friend_id: request.friendId, expired_at: later(14 * DAY).toISOString() },
        },
      ]);
  });

  it('refuses to approve twice, or after a decline', () => {
    spec
      .given(requested, approved)
      .when(approve(['create_for']))
      .thenThrows('conflict');
    const declined = spec
      .given(requested)
      .when({ type: 'DeclineFriend', ...op('alice') })
      .events();
    spec
      .given(requested, ...declined)
      .when(approve(['create_for']))
      .thenThrows('conflict');
  });
});

describe('expiry (14 days by default)', () => {
  const due = later(14 * DAY);
  const expired = spec.given(requested).when({ type: 'ExpireFriend' }, due).events()[0] as FriendEvent;

  it('records no actor: the clock ended the request, and the state says expired with nobody behind it', () => {
    expect(expired.data).toEqual({ friend_id: request.friendId, expired_at: due.toISOString() });
    expect(spec.given(requested, expired).state()).toMatchObject({ status: 'expired', endedBy: null });
  });

  it('is recorded once, and never for a request that was answered or withdrawn before it was due', () => {
    spec
      .given(requested, expired)
      .when({ type: 'ExpireFriend' }, later(20 * DAY))
      .thenNothing();
    spec
      .given(requested, approved)
      .when({ type: 'ExpireFriend' }, later(20 * DAY))
      .thenNothing();
    const declined = spec
      .given(requested)
      .when({ type: 'DeclineFriend', ...op('alice') })
      .events();
    spec
      .given(requested, ...declined)
      .when({ type: 'ExpireFriend' }, later(20 * DAY))
      .thenNothing();
  });

  it('refuses every move on a request past its expiry with the same 409 naming expires_at, recorded or not', () => {
    const moves: FriendCommand[] = [
      approve(['create_for']),
      { type: 'DeclineFriend', ...op('alice') },
      { type: 'NarrowFriend', ...op('alice'), verbs: ['create_for'] },
      { type: 'RevokeFriend', ...op('alice') },
      { type: 'WithdrawFriend', actor: { kind: 'task', label: 'a2a' } },
    ];
    for (const move of moves) {
      for (const given of [[requested], [requested, expired]]) {
        const refused = spec
          .given(...given)
          .when(move, later(15 * DAY))
          .thenThrows('conflict', /the request expired at 2026-12-09T10:00:00.000Z/);
        expect(refused, move.type).toBeInstanceOf(RequestExpired);
        expect(refused.extensions).toEqual({ expires_at: due.toISOString() });
      }
    }
  });

  it('is not an expiry to anyone else: another operator still hears not found', () => {
    const refused = spec
      .given(requested)
      .when(approve(['create_for'], 'mallory'), later(15 * DAY))
      .thenThrows('not_found');
    expect(refused).not.toBeInstanceOf(RequestExpired);
  });

  it('one millisecond before it, the request is still answerable', () => {
    expect(
      spec
        .given(requested)
        .when(approve(['create_for']), new Date(due.getTime() - 1))
        .events()[0]?.type,
    ).toBe('FriendApproved');
  });
});

describe('narrowing, revocation, withdrawal, the credential', () => {
  it('narrows only within the grant, and narrowing to the same grant changes nothing', () => {
    spec
      .given(requested, approved)
      .when({ type: 'NarrowFriend', ...op('alice'), verbs: ['claim_next'] })
      .thenEvents([
        {
          type: 'FriendNarrowed',
          data: {
            friend_id: request.friendId,
            granted_verbs: ['claim_next'],
            narrowed_by: 'alice',
            narrowed_at: now.toISOString(),
          },
        },
      ]);
    spec
      .given(requested, approved)
      .when({ type: 'NarrowFriend', ...op('alice'), verbs: ['release'] })
      .thenThrows('bad_request');
    spec
      .given(requested, approved)
      .when({ type: 'NarrowFriend', ...op('alice'), verbs: ['create_for', 'claim_next', 'complete'] })
      .thenNothing();
  });

  it('revokes an approved edge once; a pending one is declined, not revoked', () => {
    const revoked = spec
      .given(requested, approved)
      .when({ type: 'RevokeFriend', ...op('alice') })
      .events();
    expect(revoked[0]?.type).toBe('FriendRevoked');
    spec
      .given(requested, approved, ...revoked)
      .when({ type: 'RevokeFriend', ...op('alice') })
      .thenNothing();
    spec
      .given(requested)
      .when({ type: 'RevokeFriend', ...op('alice') })
      .thenThrows('conflict');
  });

  it('lets the A2A task holder withdraw a pending request, not an approved one', () => {
    const [withdrawn] = spec
      .given(requested)
      .when({ type: 'WithdrawFriend', actor: { kind: 'task', label: 'a2a' } })
      .events();
    expect(withdrawn?.type).toBe('FriendWithdrawn');
    spec
      .given(requested, approved)
      .when({ type: 'WithdrawFriend', actor: { kind: 'task', label: 'a2a' } })
      .thenThrows('conflict');
    spec
      .given(requested)
      .when({ type: 'WithdrawFriend', actor: { kind: 'operator', ...op('alice') } })
      .thenThrows('not_found');
  });

  it('hands the credential over once', () => {
    const collect: FriendCommand = { type: 'CollectFriendCredential', actor: { kind: 'task', label: 'a2a' } };
    const [collected] = spec.given(requested, approved).when(collect).events();
    expect(collected?.type).toBe('FriendCredentialCollected');
    spec.given(requested, approved, collected!).when(collect).thenNothing();
    spec.given(requested).when(collect).thenNothing();
  });
});

/**
 * The invariant of release 0.5.0 items 2 and 6: whatever commands arrive, in whatever order and
 * with whatever verbs, neither a friend edge's grant nor its friend endpoint ever holds a verb
 * outside create_for plus the drain verbs, and neither ever widens. Every command that touches an
 * endpoint's verbs is in the sequences: the vend at approval, NarrowEndpoint, ChangeEndpointScope
 * (the operator's PATCH) and RevokeEndpoint.
 */
describe('no command sequence gives a friend a verb outside the grantable set (fast-check)', () => {
  // Mostly grantable verbs, so that approvals and vends get through often enough for the later
  // steps to act on a live friend endpoint; the rest any verb of the catalogue or none at all.
  const verb = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...FRIEND_GRANTABLE) },
    { weight: 1, arbitrary: fc.constantFrom(...ALL_VERBS, 'drop_database', '') },
  );
  const verbs = fc.array(verb, { maxLength: 8 });
  const actor = fc.constantFrom('alice', 'mallory');
  const step = fc.oneof(
    fc.record({ kind: fc.constant('request' as const), verbs }),
    fc.record({ kind: fc.constant('approve' as const), verbs, operator: actor }),
    fc.record({ kind: fc.constant('narrow' as const), verbs, operator: actor }),
    fc.record({ kind: fc.constant('revoke' as const), operator: actor }),
    fc.record({ kind: fc.constant('decline' as const), operator: actor }),
    fc.record({ kind: fc.constant('withdraw' as const) }),
    fc.record({ kind: fc.constant('expire' as const), days: fc.integer({ min: 0, max: 30 }) }),
    // PATCH /api/v1/endpoints/{ref} on the friend endpoint: the other path that sets its verbs.
    fc.record({
      kind: fc.constant('scope' as const),
      verbs: fc.option(verbs, { nil: undefined }),
      queues: fc.option(fc.shuffledSubarray(['handback', 'inbox', 'other', 'quarantine']), {
        nil: undefined,
      }),
      moveTo: fc.option(fc.constantFrom('handback', 'inbox'), { nil: undefined }),
      operator: actor,
    }),
  );

  function tryDecide<C, S, E extends { type: string; data: unknown }>(
    decider: { decide: (c: C, s: S, n: Date) => E[]; evolve: (s: S, e: E) => S },
    command: C,
    state: S,
    at: Date,
  ): S {
    try {
      return decider.decide(command, state, at).reduce(decider.evolve, state);
    } catch (err) {
      if (err instanceof DomainError) return state;
      throw err;
    }
  }

  it('holds for edge and endpoint alike', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 14 }), (steps) => {
        let edge: FriendState = friendDecider.initialState();
        let endpoint: EndpointState = endpointDecider.initialState();
        let at = now;
        let lastGrant: readonly string[] | null = null;
        let lastEndpointVerbs: readonly string[] | null = null;
        for (const s of steps) {
          let command: FriendCommand | null = null;
          let endpointCommand: EndpointCommand | null = null;
          switch (s.kind) {
            case 'request':
              command = { ...request, verbs: s.verbs };
              break;
            case 'approve':
              command = approve(s.verbs, s.operator);
              // The endpoint decider is handed the raw verbs: it must refuse on its own.
              endpointCommand = {
                type: 'VendEndpoint',
                endpointId: 'ep_bbbbbbbbbbbbbbbbbbbb',
                slug: 'build-bot-ghijkl',
                agentId: 'ag_aaaaaaaaaaaaaaaaaaaa',
                agentName: 'Build Bot',
                operator: 'alice',
                human: 'alice',
                queues: ['handback'],
                verbs: s.verbs as never,
                tokenHash: 'a'.repeat(64),
                webhookId: '',
                replayTargets: [],
                expiresAt: null,
                friendId: request.friendId,
              };
              break;
            case 'narrow':
              command = { type: 'NarrowFriend', ...op(s.operator), verbs: s.verbs };
              endpointCommand = {
                type: 'NarrowEndpoint',
                operator: s.operator,
                human: s.operator,
                verbs: s.verbs,
              };
              break;
            case 'revoke':
              command = { type: 'RevokeFriend', ...op(s.operator) };
              endpointCommand = { type: 'RevokeEndpoint', operator: s.operator, human: s.operator };
              break;
            case 'decline':
              command = { type: 'DeclineFriend', ...op(s.operator) };
              break;
            case 'withdraw':
              command = { type: 'WithdrawFriend', actor: { kind: 'task', label: 'a2a' } };
              break;
            case 'expire':
              at = new Date(at.getTime() + s.days * DAY);
              command = { type: 'ExpireFriend' };
              break;
            case 'scope':
              endpointCommand = {
                type: 'ChangeEndpointScope',
                operator: s.operator,
                human: s.operator,
                queues: s.queues,
                // Raw, ungrantable verbs included: the endpoint decider must refuse on its own.
                verbs: s.verbs as never,
                moveTo: s.moveTo,
                liveTodos: {},
              };
              break;
          }
          if (command)
            edge = tryDecide<FriendCommand, FriendState, FriendEvent>(friendDecider, command, edge, at);
          if (endpointCommand) {
            endpoint = tryDecide<EndpointCommand, EndpointState, EndpointEvent>(
              endpointDecider,
              endpointCommand,
              endpoint,
              at,
            );
          }
          if (edge.status !== 'none' && edge.grant) {
            for (const v of edge.grant.verbs) expect(FRIEND_GRANTABLE).toContain(v);
            for (const v of edge.grant.verbs) expect(edge.requestedVerbs).toContain(v);
            if (lastGrant) for (const v of edge.grant.verbs) expect(lastGrant).toContain(v);
            lastGrant = edge.grant.verbs;
          }
          if (endpoint.status !== 'none') {
            expect(endpoint.friendId).toBe(request.friendId);
            // Its queue is the requester's, fixed by the request: no scope change moves it.
            expect(endpoint.queues).toEqual(['handback']);
            for (const v of endpoint.verbs) expect(FRIEND_GRANTABLE).toContain(v);
            if (lastEndpointVerbs) for (const v of endpoint.verbs) expect(lastEndpointVerbs).toContain(v);
            lastEndpointVerbs = endpoint.verbs;
          }
        }
      }),
      { numRuns: 1000 },
    );
  });
});
