import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/clock.ts';
import { type CommandDeps, handleCommand, readAggregate } from '../../src/commands/handle-command.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { openPostgres, type SqlDatabase } from '../../src/db/open.ts';
import { type ChangeSettings, settingsDecider } from '../../src/domain/settings/decide.ts';
import type { SettingsState } from '../../src/domain/settings/state.ts';
import { HooklineError } from '../../src/errors.ts';
import { type EventStore, WrongExpectedVersionError } from '../../src/eventstore/port.ts';
import { createSqlEventStore } from '../../src/eventstore/sql/store.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';

const hasPg = await postgresAvailable();

const rows = (n: number): ChangeSettings => ({
  type: 'ChangeSettings',
  values: { retention_max_rows: n },
  actor: 'test',
});
const rowsOf = (state: SettingsState): number => state.settings.retention_max_rows;

/**
 * The one command handler against a real event store: a conflict is another writer's append
 * between the handler's read and its append (PostgreSQL refuses the expected revision), made here
 * by a second writer from inside the decision.
 */
describe.runIf(hasPg)('handleCommand: read, fold, decide, append, retry a conflict (PostgreSQL)', () => {
  let database: TestDatabase | undefined;
  let sql: SqlDatabase | undefined;
  let store: EventStore | undefined;
  const deps = (): CommandDeps => {
    if (!store) throw new Error('the store is opened in beforeAll');
    return { store, clock: fixedClock('2026-11-22T10:00:00.000Z') };
  };
  beforeAll(async () => {
    database = await createTestDatabase('hookline_handle_command');
    sql = openPostgres(database.url, { max: 4 });
    await migrateToLatest(sql.db);
    store = await createSqlEventStore(sql, { pollMs: 200 });
  });
  afterAll(async () => {
    await store?.close();
    await sql?.close();
    await database?.drop();
  });

  /** A stream of its own, holding one change to `start` rows. */
  async function seeded(start: number): Promise<string> {
    const stream = `settings-test-${randomUUID()}`;
    await handleCommand(deps(), stream, settingsDecider, rows(start));
    return stream;
  }

  /** What the stream holds, as max-rows values in order. */
  async function history(stream: string): Promise<number[]> {
    const values: number[] = [];
    for await (const e of deps().store.readStream(stream)) {
      const data = JSON.parse(new TextDecoder().decode(e.data)) as {
        settings: { retention_max_rows: number };
      };
      values.push(data.settings.retention_max_rows);
    }
    return values;
  }

  it('loses one race, reads the other writer’s event, decides again on it and appends after it', async () => {
    const stream = await seeded(100_000);
    const seen: number[] = [];
    const result = await handleCommand(deps(), stream, settingsDecider, async (state, now) => {
      seen.push(rowsOf(state));
      // The other writer appends first, once: this attempt's append then meets a newer revision.
      if (seen.length === 1) await handleCommand(deps(), stream, settingsDecider, rows(200_000));
      return settingsDecider.decide(rows(rowsOf(state) + 1), state, now);
    });
    expect(seen).toEqual([100_000, 200_000]);
    expect(result.revision).toBe(2n);
    expect(rowsOf(result.state)).toBe(200_001);
    expect(result.events).toHaveLength(1);
    expect(result.position).toBeDefined();
    expect(await history(stream)).toEqual([100_000, 200_000, 200_001]);
    expect(rowsOf((await readAggregate(deps().store, stream, settingsDecider)).state)).toBe(200_001);
  });

  it('is bounded: after `retries` more lost races it gives up with the store’s conflict, appending nothing of its own', async () => {
    const stream = await seeded(100_000);
    let decisions = 0;
    const alwaysBeaten = async (state: SettingsState, now: Date) => {
      decisions++;
      await handleCommand(deps(), stream, settingsDecider, rows(300_000 + decisions));
      return settingsDecider.decide(rows(1_000), state, now);
    };
    const refused = await handleCommand(deps(), stream, settingsDecider, alwaysBeaten, { retries: 2 }).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(WrongExpectedVersionError);
    expect(decisions).toBe(3);
    expect(await history(stream)).toEqual([100_000, 300_001, 300_002, 300_003]);
  });

  it('with a conflict message, the race lost for good is the problem `conflict` with that detail', async () => {
    const stream = await seeded(100_000);
    let decisions = 0;
    const refused = await handleCommand(
      deps(),
      stream,
      settingsDecider,
      async (state, now) => {
        decisions++;
        await handleCommand(deps(), stream, settingsDecider, rows(400_000 + decisions));
        return settingsDecider.decide(rows(1_000), state, now);
      },
      { conflictMessage: 'the settings changed concurrently; retry' },
    ).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(HooklineError);
    expect((refused as HooklineError).code).toBe('conflict');
    expect((refused as HooklineError).message).toBe('the settings changed concurrently; retry');
    expect((refused as HooklineError).cause).toBeInstanceOf(WrongExpectedVersionError);
    // The default bound: the first decision and three more.
    expect(decisions).toBe(4);
  });

  it('a new stream whose id is already taken is a conflict, never an append on top of it', async () => {
    const stream = await seeded(100_000);
    const refused = await handleCommand(deps(), stream, settingsDecider, rows(500_000), {
      newStream: true,
      retries: 0,
      conflictMessage: 'that id is taken',
    }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(HooklineError);
    expect((refused as HooklineError).message).toBe('that id is taken');
    expect(await history(stream)).toEqual([100_000]);
  });

  it('a refusal is not a conflict: it is thrown at once, without another decision', async () => {
    const stream = await seeded(100_000);
    let decisions = 0;
    const refused = await handleCommand(deps(), stream, settingsDecider, (state, now) => {
      decisions++;
      return settingsDecider.decide(rows(-1), state, now);
    }).catch((e: unknown) => e);
    expect((refused as { code?: string }).code).toBe('invalid_setting');
    expect(decisions).toBe(1);
    expect(await history(stream)).toEqual([100_000]);
  });
});
