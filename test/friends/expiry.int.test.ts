import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFriendOf } from '../../projections/friends.queries.ts';
import { fixedClock } from '../../src/clock.ts';
import { loadConfig } from '../../src/config.ts';
import { RequestExpired } from '../../src/domain/friend/decide.ts';
import {
  approveFriend,
  declineFriend,
  type FriendDeps,
  narrowFriend,
  requestFriend,
  revokeFriend,
  setFriendRequests,
} from '../../src/friends/edges.ts';
import { createFriendExpiry, FRIEND_EXPIRY_LOCK_KEY } from '../../src/friends/expiry.ts';
import { createRuntime, type Runtime } from '../../src/runtime.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { readStream } from '../http/api/client.ts';
import { vendTestEndpoint } from '../support/runtime.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';

const DAY = 86_400_000;
const alice = { operator: 'alice', human: 'alice' };

/**
 * Friend requests expire after 14 days on the injected clock: a move that finds one expired
 * records FriendExpired before it answers 409, and the sweep records it for requests nobody
 * touched, one instance at a time (an advisory lock), on real PostgreSQL.
 */
describe.runIf(await postgresAvailable())('friend request expiry', () => {
  let database: TestDatabase;
  let runtime: Runtime;
  let deps: FriendDeps;
  const clock = fixedClock('2026-11-25T10:00:00.000Z');
  let slug: string;

  beforeAll(async () => {
    database = await createTestDatabase('hookline_friend_expiry');
    runtime = await createRuntime(
      loadConfig({ DATABASE_URL: database.url, HOOKLINE_LOG_LEVEL: 'silent' }, 'test'),
      { clock },
    );
    deps = {
      store: runtime.store,
      clock,
      secretBox: createSecretBox({
        secretKey: randomBytes(32).toString('base64url'),
        dataDir: '/nonexistent',
      }),
    };
    slug = (await vendTestEndpoint(runtime, 'Approver')).slug;
    await setFriendRequests(deps, { ...alice, ref: slug, accept: true });
  });
  afterAll(async () => {
    await runtime?.close();
    await database?.drop();
  });

  const ask = async (name: string) => {
    const { state } = await requestFriend(deps, {
      approverSlug: slug,
      requester: { name, description: null, cardUrl: null, endpointId: null, operator: null },
      verbs: ['create_for', 'claim_next'],
      queue: 'handback',
      message: null,
      via: 'a2a',
      sourceIp: null,
      by: 'a2a',
    });
    if (state.status === 'none') throw new Error('not recorded');
    return state.id;
  };
  const typesOf = async (id: string) => (await readStream(runtime.store, `friend-${id}`)).map((e) => e.type);
  const settled = async () =>
    runtime.projections.waitFor(await runtime.store.committedPosition(), { timeoutMs: 60_000 });
  const vendsFor = async (id: string) => {
    let n = 0;
    for await (const e of runtime.store.readAll()) {
      if (e.type === 'EndpointVended' && new TextDecoder().decode(e.data).includes(id)) n++;
    }
    return n;
  };
  const sweep = () =>
    createFriendExpiry({
      store: runtime.store,
      db: runtime.db,
      sql: runtime.sql,
      clock,
      logger: runtime.logger,
    });

  it('an approve after the expiry answers 409, records FriendExpired and mints nothing', async () => {
    const id = await ask('Late Bot');
    clock.advance(14 * DAY);
    const refused = await approveFriend(deps, { ...alice, friendRef: id, verbs: undefined }).catch((e) => e);
    expect(refused).toBeInstanceOf(RequestExpired);
    expect(await typesOf(id)).toEqual(['FriendRequested', 'FriendExpired']);
    expect(await vendsFor(id)).toBe(0);
    // Asked again, the same answer, and nothing more recorded.
    await expect(approveFriend(deps, { ...alice, friendRef: id, verbs: undefined })).rejects.toThrow(
      RequestExpired,
    );
    await expect(declineFriend(deps, { ...alice, friendRef: id })).rejects.toThrow(RequestExpired);
    expect(await typesOf(id)).toEqual(['FriendRequested', 'FriendExpired']);
    await settled();
    expect(await findFriendOf(runtime.db, 'alice', id)).toMatchObject({ status: 'expired', ended_by: null });
  });

  it('narrow and revoke of an expired request record the expiry too', async () => {
    for (const move of [
      (id: string) => narrowFriend(deps, { ...alice, friendRef: id, verbs: ['create_for'] }),
      (id: string) => revokeFriend(deps, { ...alice, friendRef: id }),
    ]) {
      const id = await ask('Forgotten Bot');
      clock.advance(15 * DAY);
      await expect(move(id)).rejects.toThrow(RequestExpired);
      expect(await typesOf(id)).toEqual(['FriendRequested', 'FriendExpired']);
    }
  });

  it('the sweep records the expiry of untouched requests that are due, and of nothing else', async () => {
    const due = await ask('Untouched Bot');
    const answered = await ask('Answered Bot');
    await approveFriend(deps, { ...alice, friendRef: answered, verbs: ['create_for'] });
    clock.advance(10 * DAY);
    const young = await ask('Young Bot');
    clock.advance(5 * DAY); // `due` is 15 days old, `young` 5
    await settled();

    expect(await sweep().runOnce()).toBe(1);
    expect(await typesOf(due)).toEqual(['FriendRequested', 'FriendExpired']);
    expect(await typesOf(answered)).toEqual(['FriendRequested', 'FriendApproved']);
    expect(await typesOf(young)).toEqual(['FriendRequested']);
    await settled();
    expect(await findFriendOf(runtime.db, 'alice', due)).toMatchObject({ status: 'expired' });
    expect(await findFriendOf(runtime.db, 'alice', young)).toMatchObject({ status: 'pending' });
    // Again: nothing left to record.
    expect(await sweep().runOnce()).toBe(0);

    clock.advance(9 * DAY); // `young` is due now
    await settled();
    expect(await sweep().runOnce()).toBe(1);
    expect(await typesOf(young)).toEqual(['FriendRequested', 'FriendExpired']);
  });

  it('sweeps in one instance at a time: while another holds the lock, it records nothing', async () => {
    clock.advance(DAY);
    const id = await ask('Waiting Bot');
    clock.advance(15 * DAY);
    await settled();
    const other = new pg.Client({ connectionString: database.url });
    await other.connect();
    try {
      const held = await other.query<{ ok: boolean }>('select pg_try_advisory_lock($1) as ok', [
        FRIEND_EXPIRY_LOCK_KEY,
      ]);
      expect(held.rows[0]?.ok).toBe(true);
      expect(await sweep().runOnce()).toBeNull();
      expect(await typesOf(id)).toEqual(['FriendRequested']);
      await other.query('select pg_advisory_unlock($1)', [FRIEND_EXPIRY_LOCK_KEY]);
      expect(await sweep().runOnce()).toBe(1);
      expect(await typesOf(id)).toEqual(['FriendRequested', 'FriendExpired']);
    } finally {
      await other.end();
    }
  });
});
