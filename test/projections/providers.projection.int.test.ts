import { beforeEach, describe, expect, it } from 'vitest';
import { providersProjection } from '../../projections/providers.projection.ts';
import { providerNames } from '../../projections/providers.queries.ts';
import { loadConfig } from '../../src/config.ts';
import { delivery, projectionSpec, recorded, resetStreams } from '../support/projection-spec.ts';
import { postgresAvailable } from '../support/services.ts';

const t = (s: number) => new Date(Date.UTC(2026, 10, 22, 10, 0, s)).toISOString();

describe.runIf(await postgresAvailable())('providers read model: given events, then rows', () => {
  const spec = projectionSpec(providersProjection);
  beforeEach(resetStreams);

  it('counts deliveries per provider and keeps the newest, and follows a generic provider', async () => {
    await spec
      .given(
        recorded('provider-generic:ci', {
          type: 'GenericProviderCreated',
          data: {
            name: 'generic:ci',
            trust_mode: 'token',
            token_hash: 'h',
            created_by: 'admin',
            created_at: t(0),
          },
        }),
        recorded('provider-generic:ci', {
          type: 'ProviderEnabled',
          data: { name: 'generic:ci', by: 'admin', at: t(0) },
        }),
        delivery({ provider: 'generic:ci', received_at: t(2), trust_mode: 'token' }),
        delivery({ provider: 'generic:ci', received_at: t(1), trust_mode: 'token' }),
        delivery({ provider: 'codehost', received_at: t(3) }),
      )
      .thenRows(async (db) => {
        const rows = await db.selectFrom('providers').selectAll().orderBy('name').execute();
        expect(rows.map((r) => [r.name, r.kind, r.enabled, Number(r.event_count), r.last_event_at])).toEqual([
          ['codehost', 'codehost', true, 1, new Date(t(3))],
          ['generic:ci', 'generic', true, 2, new Date(t(2))],
        ]);
        const config = loadConfig({ HOOKLINE_OPERATOR: 'admin' });
        expect(await providerNames(config, db)).toEqual(['codehost', 'payments', 'chat', 'generic:ci']);
      });
  });
});
