import { afterAll, beforeAll } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { ALL_VERBS } from '../../src/domain/endpoint/verbs.ts';
import { vendEndpoint } from '../../src/endpoints/vend.ts';
import { createFollowUps } from '../../src/follow-up.ts';
import { createDeliveryRecorder } from '../../src/ingest/recorder.ts';
import { createRuntime, type Runtime } from '../../src/runtime.ts';
import { type PushInput, pushTodo } from '../../src/todos/push.ts';
import { createTestDatabase, type TestDatabase } from './services.ts';

/**
 * A runtime of the whole service on a database of the suite's own (server mode, logs silent),
 * opened before the suite's tests and closed and dropped after them. Read `.runtime` inside a test
 * or hook: it exists once the suite's beforeAll has run.
 */
export function useTestRuntime(databasePrefix: string): { readonly runtime: Runtime } {
  let database: TestDatabase | undefined;
  let runtime: Runtime | undefined;
  beforeAll(async () => {
    database = await createTestDatabase(databasePrefix);
    runtime = await createRuntime(
      loadConfig({ DATABASE_URL: database.url, HOOKLINE_LOG_LEVEL: 'silent' }, 'test'),
    );
  });
  afterAll(async () => {
    await runtime?.close();
    await database?.drop();
  });
  return {
    get runtime() {
      if (!runtime) throw new Error('the test runtime is opened in beforeAll: read it inside a test');
      return runtime;
    },
  };
}

/** Vends alice an endpoint with every verb on `inbox`, as the operator API would. */
export function vendTestEndpoint(runtime: Runtime, name: string) {
  return vendEndpoint(
    { store: runtime.store, clock: runtime.clock, checkReplayTarget: async () => {} },
    {
      operator: 'alice',
      human: 'alice',
      name,
      queues: ['inbox'],
      verbs: [...ALL_VERBS],
      expiresAt: null,
      replayTargets: [],
    },
  );
}

/** Alice pushes a todo onto her endpoint `ref` (slug or id), as the operator API would. */
export function pushTestTodo(runtime: Runtime, ref: string, fields: Partial<PushInput> = {}) {
  const { store, clock, logger } = runtime;
  return pushTodo(
    {
      store,
      clock,
      recorder: createDeliveryRecorder({ store, clock }),
      followUps: createFollowUps({ logger }),
    },
    {
      ref,
      operator: 'alice',
      human: 'alice',
      title: 't',
      queue: undefined,
      kind: 'k',
      payload: null,
      key: null,
      sourceIp: null,
      headers: {},
      ...fields,
    },
  );
}

/** `count` todos pushed one after the other (titles t0, t1, …); their ids, oldest first. */
export async function pushTestTodos(runtime: Runtime, ref: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await pushTestTodo(runtime, ref, { title: `t${i}` })).id);
  return ids;
}
