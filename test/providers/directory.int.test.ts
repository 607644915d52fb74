import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { providerStream } from '../../src/domain/provider/events.ts';
import { HooklineError } from '../../src/errors.ts';
import { encodeEvent } from '../../src/eventstore/codec.ts';
import type { EventStore } from '../../src/eventstore/port.ts';
import {
  createProviderDirectory,
  isConfigured,
  type ProviderDirectoryDeps,
} from '../../src/providers/directory.ts';
import { readStream } from '../http/api/client.ts';
import { useTestRuntime } from '../support/runtime.ts';
import { postgresAvailable } from '../support/services.ts';

const hasPg = await postgresAvailable();

/** The environment this test's directories see: codehost signed, one broker channel. */
const config = loadConfig(
  {
    DATABASE_URL: 'postgres://unused@127.0.0.1/unused',
    HOOKLINE_CODEHOST_SECRET: 'codehost-secret',
    HOOKLINE_BROKER_URL: 'redis://127.0.0.1:6379',
    HOOKLINE_BROKER_CHANNELS: 'orders',
  },
  'test',
);

describe('isConfigured', () => {
  it('signed providers with a secret, broker channels that are listed; nothing else', () => {
    expect(isConfigured(config, 'codehost')).toBe(true);
    expect(isConfigured(config, 'payments')).toBe(false);
    expect(isConfigured(config, 'chat')).toBe(false);
    expect(isConfigured(config, 'broker:orders')).toBe(true);
    expect(isConfigured(config, 'broker:other')).toBe(false);
    expect(isConfigured(config, 'generic:ci')).toBe(false);
    expect(isConfigured(config, 'operator')).toBe(false);
    expect(isConfigured(config, 'not a provider')).toBe(false);
  });
});

/**
 * The provider directory ingestion reads: each provider's state from its own stream, kept for a
 * short while; this process's own decisions are seen at once, another process's once it expires.
 */
describe.runIf(hasPg)('createProviderDirectory (PostgreSQL)', () => {
  const suite = useTestRuntime('hookline_providers_directory');
  let unique = 0;
  const generic = () => `generic:p${++unique}-${Date.now().toString(36)}`;
  const directory = (over: Partial<ProviderDirectoryDeps> = {}) =>
    createProviderDirectory({ store: suite.runtime.store, clock: suite.runtime.clock, config, ...over });

  /** The store with its stream reads counted. */
  const counted = (store: EventStore, fail = 0) => {
    const reads = { n: 0, fail };
    const proxy = new Proxy(store, {
      get(target, key, receiver) {
        if (key === 'readStream')
          return (...args: Parameters<EventStore['readStream']>) => {
            reads.n++;
            if (reads.fail > 0) {
              reads.fail--;
              throw new Error('connection refused');
            }
            return target.readStream(...args);
          };
        return Reflect.get(target, key, receiver);
      },
    });
    return { store: proxy, reads };
  };

  it('load: the state folded from the stream, its initial state from the name and the environment', async () => {
    const providers = directory();
    expect(await providers.load('codehost')).toEqual({
      state: {
        name: 'codehost',
        kind: 'codehost',
        exists: true,
        trust_mode: 'signed',
        enabled: true,
        token_hash: null,
        created_at: null,
      },
      revision: -1n,
    });
    expect((await providers.load('payments'))?.state).toMatchObject({ exists: false, enabled: false });
    expect((await providers.load('broker:orders'))?.state).toMatchObject({
      exists: true,
      enabled: true,
      trust_mode: 'queue',
    });
    expect((await providers.load('generic:never-made'))?.state).toMatchObject({
      kind: 'generic',
      exists: false,
    });
    expect(await providers.load('no-such-kind')).toBeUndefined();
    expect(await providers.load('generic:Bad Name')).toBeUndefined();
  });

  it('lookup: the provider when it exists, else undefined', async () => {
    const providers = directory();
    expect((await providers.lookup('codehost'))?.enabled).toBe(true);
    expect(await providers.lookup('payments')).toBeUndefined();
    expect(await providers.lookup('generic:never-made')).toBeUndefined();
    expect(await providers.lookup('nonsense')).toBeUndefined();
  });

  it('execute creates a generic provider: one event on its stream, seen by this directory at once', async () => {
    const { store } = suite.runtime;
    const providers = directory();
    const name = generic();
    expect(await providers.lookup(name)).toBeUndefined(); // kept as missing

    const created = await providers.execute({
      type: 'CreateGenericProvider',
      name,
      trust_mode: 'token',
      token_hash: 'ab'.repeat(32),
      by: 'alice',
    });
    expect(created.events.map((e) => e.type)).toEqual(['GenericProviderCreated']);
    expect(created.state).toMatchObject({ exists: true, enabled: false, trust_mode: 'token' });
    expect((await readStream(store, providerStream(name))).map((e) => [e.type, e.data])).toEqual([
      [
        'GenericProviderCreated',
        {
          name,
          trust_mode: 'token',
          token_hash: 'ab'.repeat(32),
          created_by: 'alice',
          created_at: expect.any(String),
        },
      ],
    ]);
    expect(await providers.lookup(name)).toMatchObject({ exists: true, enabled: false });

    const enabled = await providers.execute({ type: 'SetProviderEnabled', name, enabled: true, by: 'alice' });
    expect(enabled.events.map((e) => e.type)).toEqual(['ProviderEnabled']);
    expect((await providers.lookup(name))?.enabled).toBe(true);
    // Already so: nothing happens.
    const again = await providers.execute({ type: 'SetProviderEnabled', name, enabled: true, by: 'alice' });
    expect(again.events).toEqual([]);
    expect(await readStream(store, providerStream(name))).toHaveLength(2);
  });

  it('lookups are kept: repeated ones read the stream once, until they expire', async () => {
    const kept = counted(suite.runtime.store);
    const providers = directory({ store: kept.store, ttlMs: 60_000 });
    for (let i = 0; i < 5; i++) expect((await providers.lookup('codehost'))?.enabled).toBe(true);
    for (let i = 0; i < 5; i++) expect(await providers.lookup('generic:nobody')).toBeUndefined();
    expect(kept.reads.n).toBe(2);

    const brief = counted(suite.runtime.store);
    const expiring = directory({ store: brief.store, ttlMs: 100 });
    await expiring.lookup('codehost');
    await sleep(150);
    await expiring.lookup('codehost');
    expect(brief.reads.n).toBe(2);
  });

  it("another process's toggle is seen once the kept state expires; this process's own at once", async () => {
    const kept = directory({ ttlMs: 60_000 });
    const brief = directory({ ttlMs: 100 });
    const elsewhere = directory({ ttlMs: 60_000 });
    expect((await kept.lookup('broker:orders'))?.enabled).toBe(true);
    expect((await brief.lookup('broker:orders'))?.enabled).toBe(true);

    await elsewhere.execute({ type: 'SetProviderEnabled', name: 'broker:orders', enabled: false, by: 'bob' });
    expect((await elsewhere.lookup('broker:orders'))?.enabled).toBe(false);
    expect((await kept.lookup('broker:orders'))?.enabled).toBe(true); // kept, not expired
    expect((await kept.load('broker:orders'))?.state.enabled).toBe(false); // load is never kept
    await sleep(150);
    expect((await brief.lookup('broker:orders'))?.enabled).toBe(false);

    // Its own decision, on the state read fresh: enabled again, and seen at once.
    const back = await kept.execute({
      type: 'SetProviderEnabled',
      name: 'broker:orders',
      enabled: true,
      by: 'alice',
    });
    expect(back.events.map((e) => e.type)).toEqual(['ProviderEnabled']);
    expect((await kept.lookup('broker:orders'))?.enabled).toBe(true);
    expect(
      (await readStream(suite.runtime.store, providerStream('broker:orders'))).map((e) => e.type),
    ).toEqual(['ProviderDisabled', 'ProviderEnabled']);
  });

  it('a decision is made on the stream, not on a kept state behind it', async () => {
    const here = directory({ ttlMs: 60_000 });
    const elsewhere = directory({ ttlMs: 60_000 });
    const name = generic();
    await here.lookup(name); // kept as missing
    await elsewhere.execute({
      type: 'CreateGenericProvider',
      name,
      trust_mode: 'open',
      token_hash: null,
      by: 'bob',
    });
    // Kept as missing here, but the command is decided on the stream: it exists, so this enables it.
    const enabled = await here.execute({ type: 'SetProviderEnabled', name, enabled: true, by: 'alice' });
    expect(enabled.state).toMatchObject({ exists: true, enabled: true, trust_mode: 'open' });
    expect((await here.lookup(name))?.enabled).toBe(true);
  });

  it('refusals are problems: a malformed name, an unknown provider, a duplicate, a token mismatch', async () => {
    const providers = directory();
    const name = generic();
    const refusal = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (e: unknown) => [e instanceof HooklineError, (e as HooklineError).code, (e as HooklineError).status],
      );
    expect(
      await refusal(providers.execute({ type: 'SetProviderEnabled', name: 'bogus', enabled: true, by: 'a' })),
    ).toEqual([true, 'not_found', 404]);
    expect(
      await refusal(providers.execute({ type: 'SetProviderEnabled', name, enabled: true, by: 'a' })),
    ).toEqual([true, 'not_found', 404]);
    expect(
      await refusal(
        providers.execute({
          type: 'CreateGenericProvider',
          name,
          trust_mode: 'token',
          token_hash: null,
          by: 'a',
        }),
      ),
    ).toEqual([true, 'invalid_body', 400]);
    await providers.execute({
      type: 'CreateGenericProvider',
      name,
      trust_mode: 'open',
      token_hash: null,
      by: 'a',
    });
    expect(
      await refusal(
        providers.execute({
          type: 'CreateGenericProvider',
          name,
          trust_mode: 'open',
          token_hash: null,
          by: 'a',
        }),
      ),
    ).toEqual([true, 'conflict', 409]);
    expect(
      await refusal(
        providers.execute({
          type: 'CreateGenericProvider',
          name: 'codehost',
          trust_mode: 'open',
          token_hash: null,
          by: 'a',
        }),
      ),
    ).toEqual([true, 'invalid_body', 400]);
    expect(await readStream(suite.runtime.store, providerStream(name))).toHaveLength(1);
  });

  it('a decision that loses every race is a conflict (409), not storage_unavailable, and appends nothing', async () => {
    const { store: real, clock } = suite.runtime;
    const name = generic();
    const setup = directory();
    await setup.execute({
      type: 'CreateGenericProvider',
      name,
      trust_mode: 'open',
      token_hash: null,
      by: 'a',
    });
    await setup.execute({ type: 'SetProviderEnabled', name, enabled: true, by: 'a' });
    // Another writer enables it again just before each of our appends: every one meets a newer revision.
    let raced = 0;
    const racing = new Proxy(real, {
      get(target, key, receiver) {
        if (key === 'append')
          return async (...args: Parameters<EventStore['append']>) => {
            if (args[0] === providerStream(name)) {
              raced++;
              await target.append(providerStream(name), [
                encodeEvent({
                  type: 'ProviderEnabled',
                  data: { name, by: 'other', at: clock.now().toISOString() },
                }),
              ]);
            }
            return target.append(...args);
          };
        return Reflect.get(target, key, receiver);
      },
    });
    const refused = await directory({ store: racing })
      .execute({ type: 'SetProviderEnabled', name, enabled: false, by: 'alice' })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(HooklineError);
    expect([(refused as HooklineError).code, (refused as HooklineError).status]).toEqual(['conflict', 409]);
    expect(raced).toBe(4); // the first decision and three more
    const types = (await readStream(real, providerStream(name))).map((e) => e.type);
    expect(types.filter((t) => t === 'ProviderDisabled')).toEqual([]);
  });

  it('a store that cannot be read is storage_unavailable, and the failure is not kept', async () => {
    const { store, reads } = counted(suite.runtime.store, 1);
    const providers = directory({ store, ttlMs: 60_000 });
    const failed = await providers.lookup('codehost').catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(HooklineError);
    expect((failed as HooklineError).code).toBe('storage_unavailable');
    expect((failed as HooklineError).status).toBe(503);
    expect((await providers.lookup('codehost'))?.enabled).toBe(true);
    expect(reads.n).toBe(2);
  });
});
