import { beforeEach, describe, expect, it } from 'vitest';
import { friendsProjection } from '../../projections/friends.projection.ts';
import { approvedEdgesOf, findFriendOf, listFriendsOf } from '../../projections/friends.queries.ts';
import type { FriendEvent } from '../../src/domain/friend/events.ts';
import { projectionSpec, recorded, resetStreams } from '../support/projection-spec.ts';
import { postgresAvailable } from '../support/services.ts';

const t = (s: number) => new Date(Date.UTC(2026, 10, 22, 10, 0, s)).toISOString();
const edge = (id: string, event: FriendEvent) => recorded(`friend-${id}`, event);

/** A request from alice's endpoint ep_a to bob's endpoint ep_b (or from a remote agent over A2A). */
const requested = (id: string, over: { message?: string | null; remote?: boolean; s?: number } = {}) =>
  edge(id, {
    type: 'FriendRequested',
    data: {
      friend_id: id,
      approver_endpoint_id: 'ep_b',
      approver_slug: 'bob-bot',
      approver_operator: 'bob',
      requester: over.remote
        ? {
            name: 'Remote',
            description: 'far\u0000away',
            card_url: 'https://x.test/card',
            endpoint_id: null,
            operator: null,
          }
        : { name: 'Alice Bot', description: null, card_url: null, endpoint_id: 'ep_a', operator: 'alice' },
      requested_verbs: ['create_for', 'claim_next', 'delete_everything'],
      queue: 'inbox',
      message: over.message === undefined ? 'hello' : over.message,
      via: over.remote ? 'a2a' : 'local',
      source_ip: null,
      requested_by: over.remote ? 'a2a' : 'alice',
      requested_at: t(over.s ?? 0),
      expires_at: t(1000),
    },
  });
const approved = (id: string, verbs: string[]) =>
  edge(id, {
    type: 'FriendApproved',
    data: {
      friend_id: id,
      granted_verbs: verbs,
      friend_endpoint_id: `ep_f${id}`,
      friend_slug: `friend-${id}`,
      approver_queue: 'work',
      credential_sealed: 'sealed',
      approved_by: 'bob',
      approved_at: t(10),
    },
  });
const todoFrom = (source: string, s: number) =>
  recorded(`todo-td_${s}`, {
    type: 'TodoCreated',
    data: {
      todo_id: `td_${s}`,
      endpoint_id: 'ep_b',
      slug: 'bob-bot',
      operator: 'bob',
      queue: 'work',
      kind: 'task',
      title: 'x',
      payload: null,
      key: null,
      source,
      event_id: s,
      created_by: 'alice',
      created_at: t(s),
    },
  });

describe.runIf(await postgresAvailable())('friends read model: given events, then rows', () => {
  const spec = projectionSpec(friendsProjection);
  beforeEach(resetStreams);

  it('follows an edge from request to approval, narrowing, the collected credential and a handed todo', async () => {
    await spec
      .given(
        requested('fr_1'),
        approved('fr_1', ['create_for', 'claim_next']),
        edge('fr_1', {
          type: 'FriendNarrowed',
          data: { friend_id: 'fr_1', granted_verbs: ['create_for'], narrowed_by: 'bob', narrowed_at: t(20) },
        }),
        edge('fr_1', {
          type: 'FriendCredentialCollected',
          data: { friend_id: 'fr_1', collected_by: 'alice', collected_at: t(25) },
        }),
        todoFrom('friend:fr_1', 30),
        // A todo of no edge (an operator push) touches no row.
        todoFrom('operator', 40),
      )
      .thenRows(async (db) => {
        const row = await findFriendOf(db, 'bob', 'fr_1');
        expect(row).toMatchObject({
          status: 'approved',
          approver_endpoint_id: 'ep_b',
          requester_endpoint_id: 'ep_a',
          requested_verbs: ['create_for', 'claim_next', 'delete_everything'],
          granted_verbs: ['create_for'],
          friend_endpoint_id: 'ep_ffr_1',
          approver_queue: 'work',
          queue: 'inbox',
          credential_collected: true,
          approved_at: new Date(t(10)),
          last_activity_at: new Date(t(30)),
          ended_at: null,
        });
        // The credential never enters the read model.
        expect(JSON.stringify(row)).not.toContain('sealed');
        // Both sides see it; nobody else does.
        expect((await listFriendsOf(db, 'alice')).map((f) => f.id)).toEqual(['fr_1']);
        expect(await listFriendsOf(db, 'carol')).toEqual([]);
        expect(await findFriendOf(db, 'carol', 'fr_1')).toBeUndefined();
        // list_friends serves the approver's endpoint only: a friend endpoint can never hold it
        // (its grant is create_for and the drain verbs), and the requester's own endpoint is not a side.
        expect((await approvedEdgesOf(db, 'ep_b')).map((f) => f.id)).toEqual(['fr_1']);
        expect(await approvedEdgesOf(db, 'ep_ffr_1')).toEqual([]);
        expect(await approvedEdgesOf(db, 'ep_a')).toEqual([]);
      });
  });

  it('records each ending with who made it; only approved edges are served to list_friends', async () => {
    await spec
      .given(
        requested('fr_d', { s: 1 }),
        edge('fr_d', {
          type: 'FriendDeclined',
          data: { friend_id: 'fr_d', declined_by: 'bob', declined_at: t(50) },
        }),
        requested('fr_w', { s: 2 }),
        edge('fr_w', {
          type: 'FriendWithdrawn',
          data: { friend_id: 'fr_w', withdrawn_by: 'alice', withdrawn_at: t(51) },
        }),
        requested('fr_e', { s: 3 }),
        edge('fr_e', { type: 'FriendExpired', data: { friend_id: 'fr_e', expired_at: t(52) } }),
        requested('fr_r', { s: 4 }),
        approved('fr_r', ['claim_next']),
        edge('fr_r', {
          type: 'FriendRevoked',
          data: { friend_id: 'fr_r', revoked_by: 'bob', revoked_at: t(53) },
        }),
      )
      .thenRows(async (db) => {
        const rows = await listFriendsOf(db, 'bob');
        expect(rows.map((f) => [f.id, f.status, f.ended_by, f.ended_at])).toEqual([
          ['fr_r', 'revoked', 'bob', new Date(t(53))],
          ['fr_e', 'expired', null, new Date(t(52))],
          ['fr_w', 'withdrawn', 'alice', new Date(t(51))],
          ['fr_d', 'declined', 'bob', new Date(t(50))],
        ]);
        expect(await approvedEdgesOf(db, 'ep_b')).toEqual([]);
        expect(await approvedEdgesOf(db, 'ep_ffr_r')).toEqual([]);
      });
  });

  it('keeps a remote request’s untrusted text storable, and a request applied twice is one row', async () => {
    const request = requested('fr_x', { remote: true, message: 'hi\u0000there' });
    await spec.givenBatches([request], [request]).thenRows(async (db) => {
      const rows = await listFriendsOf(db, 'bob');
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        via: 'a2a',
        requester_operator: null,
        requester_card_url: 'https://x.test/card',
        requester_description: 'far\uFFFDaway',
        message: 'hi\uFFFDthere',
        status: 'pending',
        granted_verbs: null,
      });
    });
  });
});
