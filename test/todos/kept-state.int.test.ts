import { describe, expect, it } from 'vitest';
import { createCachedAggregate } from '../../src/commands/cached-aggregate.ts';
import { readAggregate } from '../../src/commands/handle-command.ts';
import { endpointDecider } from '../../src/domain/endpoint/decide.ts';
import { endpointStream } from '../../src/domain/endpoint/events.ts';
import { type EndpointFacts, factsOf } from '../../src/domain/endpoint/state.ts';
import { DomainError } from '../../src/domain/errors.ts';
import { todoDecider } from '../../src/domain/todo/decide.ts';
import { todoStream } from '../../src/domain/todo/events.ts';
import { revokeEndpoint } from '../../src/endpoints/revoke.ts';
import { HooklineError } from '../../src/errors.ts';
import { newId } from '../../src/ids.ts';
import { createDeliveryRecorder } from '../../src/ingest/recorder.ts';
import { createEndpointAuth } from '../../src/mcp/auth.ts';
import { createDrain } from '../../src/todos/drain.ts';
import { type HandOff, handedOffTodo, handOffAppends } from '../../src/todos/hand-off.ts';
import { createKeptTodos } from '../../src/todos/kept.ts';
import { readStream } from '../http/api/client.ts';
import { pushTestTodo, useTestRuntime, vendTestEndpoint } from '../support/runtime.ts';
import { postgresAvailable } from '../support/services.ts';

const hasPg = await postgresAvailable();

/**
 * State kept between requests (an endpoint's or a webhook's folded stream, a todo as this
 * process's last move left it) must never decide on its own: a move made elsewhere since it was
 * kept is seen by the next request, exactly as if the stream had been read.
 */
describe.runIf(hasPg)('kept state is never older than the stream (PostgreSQL)', () => {
  const suite = useTestRuntime('hookline_kept_state');

  const vend = () => vendTestEndpoint(suite.runtime, 'kept');

  it('a kept endpoint state: the load after a revoke sees it, the MCP bearer is refused at once', async () => {
    const { store, clock } = suite.runtime;
    const ep = await vend();
    const load = createCachedAggregate(store, endpointDecider);
    const authenticate = createEndpointAuth({ store, clock });
    const first = await load(endpointStream(ep.endpointId));
    expect(first.state.status).toBe('active');
    expect(await load(endpointStream(ep.endpointId))).toBe(first); // unchanged stream: kept
    expect((await authenticate(ep.slug, `Bearer ${ep.token}`)).id).toBe(ep.endpointId);

    await revokeEndpoint({ store, clock }, { ref: ep.slug, operator: 'alice', human: 'alice' });

    const after = await load(endpointStream(ep.endpointId));
    expect(after.state.status).toBe('revoked');
    expect(after.revision).toBeGreaterThan(first.revision);
    const refused = await authenticate(ep.slug, `Bearer ${ep.token}`).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(HooklineError);
    expect((refused as HooklineError).code).toBe('unauthorized');
  });

  it("a todo kept by one drain after its claim: another process's release wins, the kept state completes nothing", async () => {
    const { store, clock, db } = suite.runtime;
    const ep = await vend();
    const pushed = await pushTestTodo(suite.runtime, ep.slug, { title: 'one' });
    const caller = { endpointId: ep.endpointId, queues: ['inbox'] };
    // Two drains stand for two processes.
    const here = createDrain({ store, clock, db });
    const elsewhere = createDrain({ store, clock, db });
    const claimed = await here.claim(caller, { todoId: pushed.id, sessionId: null, leaseMs: 60_000 });
    const leaseId = claimed.todo.lease!.id;
    await elsewhere.release(caller, { todoId: pushed.id, leaseId, reason: 'handed back' });

    // `here` still keeps the todo as claimed under this lease; the stream says it was released.
    const refused = await here
      .complete(caller, { todoId: pushed.id, leaseId, result: null })
      .catch((e: unknown) => e);
    // Decided again on the stream: the domain's answer, not the store's conflict.
    expect(refused).toBeInstanceOf(DomainError);
    expect((refused as DomainError).code).toBe('lease_expired');
    const types = (await readStream(store, `todo-${pushed.id}`)).map((e) => e.type);
    expect(types).not.toContain('TodoCompleted');
    expect(types.at(-1)).toBe('TodoReleased');

    // And a claim after it (a new lease) completes through the same drain.
    const again = await here.claim(caller, { todoId: pushed.id, sessionId: null, leaseMs: 60_000 });
    const done = await here.complete(caller, {
      todoId: pushed.id,
      leaseId: again.todo.lease!.id,
      result: null,
    });
    expect(done.todo.status).toBe('completed');
  });

  it('a todo handed off with its delivery is kept as reading it back would fold it, and claimed from there', async () => {
    const { store, clock, db } = suite.runtime;
    const ep = await vend();
    const endpoint = factsOf(
      (await readAggregate(store, endpointStream(ep.endpointId), endpointDecider)).state as EndpointFacts & {
        status: 'active';
      },
    );
    const todoId = newId('td');
    const handOff: HandOff = {
      todo: {
        todoId,
        endpoint,
        queue: 'inbox',
        kind: 'webhook',
        title: 'deploy',
        payload: { n: 1, nested: { at: '2026-11-25' } },
        key: null,
        source: `webhook:${ep.webhookId}`,
        human: `webhook:${ep.webhookId}`,
      },
      facts: [],
    };
    const now = clock.now();
    const recorder = createDeliveryRecorder({ store, clock });
    const recorded = await recorder.record(
      {
        payload: new TextEncoder().encode('{"n":1}'),
        provider: `webhook:${ep.webhookId}`,
        family: 'webhook',
        trust_mode: 'token',
        verified: false,
        verify_detail: 'token ok',
        event_type: 'deploy',
        external_id: null,
        content_type: 'application/json',
        source_ip: null,
        headers: {},
        route: {
          endpoint_id: ep.endpointId,
          slug: ep.slug,
          queue: 'inbox',
          todo_id: todoId,
          kind: 'webhook',
        },
      },
      handOffAppends(handOff, 'stamped', now),
    );
    const kept = handedOffTodo(handOff, recorded.ack.id, now);
    const read = await readAggregate(store, todoStream(todoId), todoDecider);
    expect(read.revision).toBe(0n);
    expect(kept).toEqual(read.state);

    // Kept for the drain: its claim appends at revision 0 without reading; a second drain, which
    // kept nothing, reads the stream and finds it claimed.
    const keptTodos = createKeptTodos();
    keptTodos.keep(todoId, { state: kept!, revision: 0n }, 7);
    const caller = { endpointId: ep.endpointId, queues: ['inbox'] };
    const here = createDrain({ store, clock, db, kept: keptTodos });
    const claimed = await here.claim(caller, { todoId, sessionId: null, leaseMs: 60_000 });
    expect(claimed.todo.eventId).toBe(recorded.ack.id);
    expect(claimed.todo.status).toBe('claimed');
    const elsewhere = createDrain({ store, clock, db });
    const second = await elsewhere
      .claim(caller, { todoId, sessionId: null, leaseMs: 60_000 })
      .catch((e: unknown) => e);
    expect(second).toBeInstanceOf(DomainError);
    const claims = (await readStream(store, todoStream(todoId))).filter((e) => e.type === 'TodoClaimed');
    expect(claims).toHaveLength(1);
  });
});
