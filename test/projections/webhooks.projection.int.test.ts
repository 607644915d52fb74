import { beforeEach, describe, expect, it } from 'vitest';
import { webhooksProjection } from '../../projections/webhooks.projection.ts';
import {
  findWebhook,
  findWebhookByTokenHash,
  listOperatorWebhooks,
  listWebhooksOfEndpoint,
  webhookNames,
  webhooksUsingQueue,
} from '../../projections/webhooks.queries.ts';
import { projectionSpec, recorded, resetStreams } from '../support/projection-spec.ts';
import { postgresAvailable } from '../support/services.ts';

const at = '2026-11-22T10:00:00.000Z';
const created = (id: string, queue: string) =>
  recorded(`webhook-${id}`, {
    type: 'WebhookCreated',
    data: {
      webhook_id: id,
      endpoint_id: 'ep_1',
      operator: 'admin',
      name: `hook ${id}`,
      queue,
      trust_mode: 'token',
      token_hash: `${id}-hash`,
      created_by: 'admin',
      created_at: at,
    },
  });

describe.runIf(await postgresAvailable())('webhooks read model: given events, then rows', () => {
  const spec = projectionSpec(webhooksProjection);
  beforeEach(resetStreams);

  it('a created webhook is found by its token hash and listed for its endpoint', async () => {
    await spec
      .given(
        created('wh_1', 'inbox'),
        recorded('webhook-wh_1', {
          type: 'WebhookSigningSecretSet',
          data: {
            webhook_id: 'wh_1',
            scheme: 'standard-webhooks',
            secret_sealed: 's',
            required: true,
            set_at: at,
          },
        }),
        created('wh_2', 'quarantine'),
      )
      .thenRows(async (db) => {
        expect((await findWebhookByTokenHash(db, 'wh_1-hash'))?.queue).toBe('inbox');
        expect((await listWebhooksOfEndpoint(db, 'ep_1')).map((w) => w.id)).toEqual(['wh_1', 'wh_2']);
        expect(await webhooksUsingQueue(db, 'quarantine')).toEqual(['wh_2']);
        expect(await webhookNames(db, ['wh_1'])).toEqual(new Map([['wh_1', 'hook wh_1']]));
      });
  });

  it('keeps the signing scheme (never the secret), the rules in order at their version, and the routes', async () => {
    const stamp = { webhook_id: 'wh_1', by: 'endpoint:bot', at };
    await spec
      .given(
        created('wh_1', 'inbox'),
        recorded('webhook-wh_1', {
          type: 'WebhookSigningSecretSet',
          data: {
            webhook_id: 'wh_1',
            scheme: 'standard-webhooks',
            secret_sealed: 'sealed',
            required: true,
            set_at: at,
          },
        }),
        recorded('webhook-wh_1', {
          type: 'WebhookRulesSet',
          data: { ...stamp, version: 1, rules: [{ id: 'a', source: "() => 'continue'" }] },
        }),
        recorded('webhook-wh_1', {
          type: 'WebhookRuleAdded',
          data: { ...stamp, version: 2, rule: { id: 'b', source: '() => ({ drop: true })' }, position: 0 },
        }),
        recorded('webhook-wh_1', {
          type: 'WebhookRouteAdded',
          data: { ...stamp, route_id: 'r1', queue: 'builds', event_type: 'build' },
        }),
        recorded('webhook-wh_1', {
          type: 'WebhookRouteAdded',
          data: { ...stamp, route_id: 'r2', queue: 'misc', event_type: null },
        }),
        recorded('webhook-wh_1', { type: 'WebhookRouteRemoved', data: { ...stamp, route_id: 'r1' } }),
        created('wh_9', 'inbox'),
      )
      .thenRows(async (db) => {
        const w = await findWebhook(db, 'wh_1');
        expect(w).toMatchObject({
          signing_scheme: 'standard-webhooks',
          signature_required: true,
          rules_version: 2,
          rules: [
            { id: 'b', source: '() => ({ drop: true })' },
            { id: 'a', source: "() => 'continue'" },
          ],
          routes: [{ route_id: 'r2', queue: 'misc', event_type: null }],
        });
        expect(JSON.stringify(w)).not.toContain('sealed');
        expect(await findWebhook(db, 'wh_9')).toMatchObject({ signing_scheme: null, rules: [], routes: [] });
        expect((await listOperatorWebhooks(db, 'admin')).map((x) => x.id)).toEqual(['wh_1', 'wh_9']);
        expect(await listOperatorWebhooks(db, 'mallory')).toEqual([]);
      });
  });
});
