import { describe, expect, it } from 'vitest';
import { listAgents } from '../../projections/agents.queries.ts';
import { findEndpointBySlug } from '../../projections/endpoints.queries.ts';
import { hashCredential } from '../../src/auth/credentials.ts';
import { agentStream } from '../../src/domain/agent/events.ts';
import { endpointSlugStream, endpointStream } from '../../src/domain/endpoint/events.ts';
import { DEFAULT_VERBS, type Verb } from '../../src/domain/endpoint/verbs.ts';
import { DomainError } from '../../src/domain/errors.ts';
import { DEFAULT_QUEUE } from '../../src/domain/queue.ts';
import { webhookStream } from '../../src/domain/webhook/events.ts';
import { agentNameStream } from '../../src/endpoints/agents.ts';
import { type VendDeps, type VendInput, vendEndpoint } from '../../src/endpoints/vend.ts';
import { HooklineError } from '../../src/errors.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { readStream } from '../http/api/client.ts';
import { useTestRuntime } from '../support/runtime.ts';
import { postgresAvailable } from '../support/services.ts';

const hasPg = await postgresAvailable();

/**
 * vendEndpoint (POST /api/v1/endpoints) against the real event store: what it returns, what it
 * appends to the agent, slug, webhook and endpoint streams, and the read models the API waits on.
 */
describe.runIf(hasPg)('vendEndpoint (PostgreSQL)', () => {
  const suite = useTestRuntime('hookline_endpoints_vend');

  const deps = (over: Partial<VendDeps> = {}): VendDeps => ({
    store: suite.runtime.store,
    clock: suite.runtime.clock,
    checkReplayTarget: async () => {},
    ...over,
  });
  /** What the API passes when the body names only `name`: DEFAULT_QUEUE and DEFAULT_VERBS. */
  const input = (over: Partial<VendInput> = {}): VendInput => ({
    operator: 'alice',
    human: 'alice@example.test',
    name: 'Build Bot',
    queues: [DEFAULT_QUEUE],
    verbs: [...DEFAULT_VERBS],
    expiresAt: null,
    replayTargets: [],
    ...over,
  });

  /** Every event of the log, data and metadata, as one string per event (bytes as latin1). */
  async function wholeLog(): Promise<string[]> {
    const out: string[] = [];
    for await (const e of suite.runtime.store.readAll()) {
      out.push(
        `${e.streamId} ${e.type} ${Buffer.from(e.data).toString('latin1')} ${e.metadata ? Buffer.from(e.metadata).toString('latin1') : ''}`,
      );
    }
    return out;
  }

  const settle = async () =>
    suite.runtime.projections.waitFor(await suite.runtime.store.committedPosition(), { timeoutMs: 10_000 });

  it('mints an endpoint, its webhook and an agent; the slug is the kebab name and six base32 characters', async () => {
    const { store } = suite.runtime;
    const vended = await vendEndpoint(deps(), input({ name: 'Build Bot ✓ Ünïcode' }));

    expect(vended.slug).toMatch(/^build-bot-unicode-[a-z2-7]{6}$/);
    expect(vended.endpointId).toMatch(/^ep_[a-z2-7]{20}$/);
    expect(vended.agentId).toMatch(/^ag_[a-z2-7]{20}$/);
    expect(vended.webhookId).toMatch(/^wh_[a-z2-7]{20}$/);
    expect(vended.agentName).toBe('Build Bot ✓ Ünïcode');
    expect(vended.agentCreated).toBe(true);
    expect(vended.queues).toEqual([DEFAULT_QUEUE]);
    expect(vended.verbs).toEqual(DEFAULT_VERBS);
    expect(vended.webhookScheme).toBe('none');
    expect(vended.webhookSecret).toBeNull();
    expect(vended.position).toBeTypeOf('string');

    const endpoint = await readStream(store, endpointStream(vended.endpointId));
    expect(endpoint.map((e) => e.type)).toEqual(['EndpointVended']);
    expect(endpoint[0]!.data).toMatchObject({
      endpoint_id: vended.endpointId,
      slug: vended.slug,
      agent_id: vended.agentId,
      agent_name: 'Build Bot ✓ Ünïcode',
      operator: 'alice',
      queues: [DEFAULT_QUEUE],
      verbs: [...DEFAULT_VERBS],
      webhook_id: vended.webhookId,
      replay_targets: [],
      expires_at: null,
      vended_by: 'alice@example.test',
    });
    const slug = await readStream(store, endpointSlugStream(vended.slug));
    expect(slug.map((e) => [e.type, e.data])).toEqual([
      ['EndpointSlugReserved', { endpoint_id: vended.endpointId, slug: vended.slug }],
    ]);
    const webhook = await readStream(store, webhookStream(vended.webhookId));
    expect(webhook.map((e) => e.type)).toEqual(['WebhookCreated']);
    expect(webhook[0]!.data).toMatchObject({ endpoint_id: vended.endpointId, queue: DEFAULT_QUEUE });
    const agent = await readStream(store, agentStream(vended.agentId));
    expect(agent.map((e) => e.type)).toEqual(['AgentRegistered']);
  });

  it('a name with no ASCII letter or digit gets the slug agent-…', async () => {
    const vended = await vendEndpoint(deps(), input({ name: '✓✓✓' }));
    expect(vended.slug).toMatch(/^agent-[a-z2-7]{6}$/);
  });

  it('returns the bearer and the ingest token once: the log and the read model hold only their hashes', async () => {
    const { store, db } = suite.runtime;
    const vended = await vendEndpoint(deps(), input({ name: 'secretive' }));
    expect(vended.token).toMatch(/^hlk_[A-Za-z0-9_-]{43}$/);
    expect(vended.ingestToken).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const [endpoint] = await readStream(store, endpointStream(vended.endpointId));
    expect((endpoint!.data as { token_hash: string }).token_hash).toBe(hashCredential(vended.token));
    const [webhook] = await readStream(store, webhookStream(vended.webhookId));
    expect((webhook!.data as { token_hash: string }).token_hash).toBe(hashCredential(vended.ingestToken));

    const log = await wholeLog();
    // The search sees what the log holds: the hashes are there.
    expect(log.filter((e) => e.includes(hashCredential(vended.token)))).toHaveLength(1);
    expect(log.filter((e) => e.includes(hashCredential(vended.ingestToken)))).toHaveLength(1);
    const secretParts = [vended.token, vended.token.slice('hlk_'.length), vended.ingestToken];
    for (const secret of secretParts) expect(log.filter((e) => e.includes(secret))).toEqual([]);

    await settle();
    const row = await findEndpointBySlug(db, vended.slug);
    expect(row?.token_hash).toBe(hashCredential(vended.token));
    expect(row?.state).toBe('active');
    expect(JSON.stringify(row)).not.toContain(vended.token.slice('hlk_'.length));
  });

  it('a signed webhook: its secret is returned once and recorded only sealed', async () => {
    const { store } = suite.runtime;
    const box = createSecretBox({ secretKey: 'k'.repeat(43), dataDir: '/nonexistent' });
    const vended = await vendEndpoint(
      deps({ seal: box.seal }),
      input({ name: 'signed', webhookSigning: { scheme: 'standard' } }),
    );
    expect(vended.webhookScheme).toBe('standard');
    expect(vended.webhookSecret).toMatch(/^whsec_/);
    const webhook = await readStream(store, webhookStream(vended.webhookId));
    const set = webhook.find((e) => e.type === 'WebhookSigningSecretSet')?.data as {
      scheme: string;
      secret_sealed: string;
      required: boolean;
    };
    expect(set.scheme).toBe('standard-webhooks');
    expect(set.required).toBe(true);
    expect(box.open(set.secret_sealed, vended.webhookId)).toBe(vended.webhookSecret);
    expect((await wholeLog()).filter((e) => e.includes(vended.webhookSecret!))).toEqual([]);
  });

  it('records the queues and verbs it is given, in order; the first queue is the one its webhook feeds', async () => {
    const { store } = suite.runtime;
    const verbs: Verb[] = ['claim_next', 'complete', 'list_todos'];
    const vended = await vendEndpoint(
      deps(),
      input({ name: 'scoped', queues: ['builds', 'deploys'], verbs }),
    );
    expect(vended.queues).toEqual(['builds', 'deploys']);
    expect(vended.verbs).toEqual(verbs);
    const [endpoint] = await readStream(store, endpointStream(vended.endpointId));
    expect(endpoint!.data).toMatchObject({ queues: ['builds', 'deploys'], verbs });
    const [webhook] = await readStream(store, webhookStream(vended.webhookId));
    expect((webhook!.data as { queue: string }).queue).toBe('builds');
  });

  it('one agent per (operator, name): a second vend reuses it, another operator gets its own', async () => {
    const { db } = suite.runtime;
    const first = await vendEndpoint(deps(), input({ name: 'reused' }));
    const second = await vendEndpoint(deps(), input({ name: 'reused' }));
    const bobs = await vendEndpoint(deps(), input({ name: 'reused', operator: 'bob', human: 'bob' }));

    expect(second.agentId).toBe(first.agentId);
    expect([first.agentCreated, second.agentCreated]).toEqual([true, false]);
    expect(second.endpointId).not.toBe(first.endpointId);
    expect(second.slug).not.toBe(first.slug);
    expect(bobs.agentId).not.toBe(first.agentId);
    expect(bobs.agentCreated).toBe(true);
    expect((await readStream(suite.runtime.store, agentStream(first.agentId))).length).toBe(1);

    await settle();
    expect((await listAgents(db, 'alice')).filter((a) => a.name === 'reused').map((a) => a.id)).toEqual([
      first.agentId,
    ]);
    expect((await listAgents(db, 'bob')).filter((a) => a.name === 'reused').map((a) => a.id)).toEqual([
      bobs.agentId,
    ]);
  });

  const refusals: { what: string; over: Partial<VendInput>; field: string }[] = [
    { what: 'the quarantine queue', over: { queues: ['quarantine'] }, field: 'queue' },
    { what: 'quarantine among queues', over: { queues: ['inbox', 'quarantine'] }, field: 'queues' },
    { what: 'a malformed queue', over: { queues: ['Not A Queue'] }, field: 'queue' },
    { what: 'no queue', over: { queues: [] }, field: 'queues' },
    { what: 'a queue named twice', over: { queues: ['a', 'a'] }, field: 'queues' },
    { what: 'no verb', over: { verbs: [] }, field: 'verbs' },
    { what: 'an expiry in the past', over: { expiresAt: new Date(Date.now() - 1000) }, field: 'expires_at' },
  ];
  for (const { what, over, field } of refusals) {
    it(`refuses ${what} (field ${field}) and mints nothing`, async () => {
      const { store } = suite.runtime;
      const name = `refused-${field}-${Math.random().toString(36).slice(2, 8)}`;
      const before = await store.committedPosition();
      const refused = await vendEndpoint(deps(), input({ name, ...over })).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(DomainError);
      expect((refused as DomainError).code).toBe('bad_request');
      expect((refused as DomainError).extensions.field).toBe(field);
      expect(await store.committedPosition()).toBe(before);
      expect(await readStream(store, agentNameStream('alice', name))).toEqual([]);
    });
  }

  it('a replay target the guard refuses mints nothing, and every target is checked', async () => {
    const { store } = suite.runtime;
    const checked: string[] = [];
    const guard = async (url: string) => {
      checked.push(url);
      if (url.includes('169.254'))
        throw new HooklineError('bad_request', 'refused', { field: 'replay_targets' });
    };
    const before = await store.committedPosition();
    const refused = await vendEndpoint(
      deps({ checkReplayTarget: guard }),
      input({ name: 'replayer', replayTargets: ['https://ok.example.test/', 'http://169.254.169.254/'] }),
    ).catch((e: unknown) => e);
    expect((refused as HooklineError).code).toBe('bad_request');
    expect(checked).toEqual(['https://ok.example.test/', 'http://169.254.169.254/']);
    expect(await store.committedPosition()).toBe(before);
  });

  it('a signed webhook without the secret box is refused before anything is minted', async () => {
    const { store } = suite.runtime;
    const before = await store.committedPosition();
    await expect(
      vendEndpoint(deps(), input({ name: 'unsealed', webhookSigning: { scheme: 'codehost' } })),
    ).rejects.toThrow(/secret box/);
    expect(await store.committedPosition()).toBe(before);
  });
});
