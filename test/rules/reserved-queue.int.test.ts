import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/cli/package.ts';
import { loadConfig } from '../../src/config.ts';
import { openEmbedded } from '../../src/db/open.ts';
import { createLogger } from '../../src/logger.ts';
import { createRuntime } from '../../src/runtime.ts';
import { freshDataDir, removeDataDir } from '../support/embedded.ts';

// Spec 9, 0.4.0 item 7: the service does not start while anything already uses `quarantine`.
describe('reserved queue name guard at start', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await freshDataDir();
  });
  afterAll(async () => {
    await removeDataDir(dir);
  });

  const start = (dataDir: string) =>
    createRuntime(
      loadConfig({ HOOKLINE_LOG_LEVEL: 'silent', HOOKLINE_DATA_DIR: dataDir }, packageVersion()),
      { logger: createLogger({ logLevel: 'silent' }) },
    );

  it('starts on a clean database, then refuses to start naming the endpoint scope, webhook and todo that use the name', async () => {
    const dataDir = dir;
    const clean = await start(dataDir);
    const now = new Date();
    await clean.db
      .insertInto('endpoints')
      .values({
        id: 'ep_legacyquarantine0000',
        slug: 'legacy-q',
        agent_id: 'ag_legacy',
        agent_name: 'legacy',
        operator: 'alice',
        state: 'active',
        queues: JSON.stringify(['quarantine']),
        verbs: JSON.stringify(['claim']),
        token_hash: 'h1',
        webhook_id: 'wh_legacy',
        replay_targets: '[]',
        created_at: now,
      })
      .execute();
    await clean.db
      .insertInto('webhooks')
      .values({
        id: 'wh_legacy',
        endpoint_id: 'ep_legacyquarantine0000',
        operator: 'alice',
        name: 'legacy',
        queue: 'quarantine',
        trust_mode: 'token',
        token_hash: 'h2',
        created_at: now,
      })
      .execute();
    await clean.db
      .insertInto('todos')
      .values({
        id: 'td_pushedintoquarantine',
        endpoint_id: 'ep_legacyquarantine0000',
        slug: 'legacy-q',
        operator: 'alice',
        queue: 'quarantine',
        kind: 'operator',
        title: 'pushed by hand',
        payload: 'null',
        key: null,
        state: 'open',
        source: 'operator',
        event_id: 1,
        created_by: 'alice',
        created_at: now,
        updated_at: now,
      })
      .execute();
    // A held webhook todo is quarantine's own: never reported.
    await clean.db
      .insertInto('todos')
      .values({
        id: 'td_heldbyarule000000000',
        endpoint_id: 'ep_other',
        slug: 'other',
        operator: 'alice',
        queue: 'quarantine',
        kind: 'webhook',
        title: 'held',
        payload: 'null',
        key: null,
        state: 'open',
        source: 'webhook',
        event_id: 2,
        created_by: 'webhook',
        created_at: now,
        updated_at: now,
      })
      .execute();
    await clean.close();

    const refused = start(dataDir);
    await expect(refused).rejects.toThrow(/reserved/);
    const message = await refused.then(
      () => '',
      (err: Error) => err.message,
    );
    expect(message).toContain('endpoint scope legacy-q');
    expect(message).toContain('webhook target wh_legacy');
    expect(message).toContain('todo td_pushedintoquarantine');
    expect(message).not.toContain('td_heldbyarule000000000');

    // The maintenance runtime (`hookline projections ...`) still opens: rebuilding is how an
    // operator may repair what the guard reports.
    const maintenance = await createRuntime(
      loadConfig({ HOOKLINE_LOG_LEVEL: 'silent', HOOKLINE_DATA_DIR: dataDir }, packageVersion()),
      { logger: createLogger({ logLevel: 'silent' }), startProjections: false },
    );
    await maintenance.close();

    // Once the offenders are gone, it starts again.
    const sql = await openEmbedded(dataDir);
    await sql.db.deleteFrom('endpoints').where('id', '=', 'ep_legacyquarantine0000').execute();
    await sql.db.deleteFrom('webhooks').where('id', '=', 'wh_legacy').execute();
    await sql.db.deleteFrom('todos').where('id', '=', 'td_pushedintoquarantine').execute();
    await sql.close();
    const again = await start(dataDir);
    await again.close();
  }, 120_000);
});
