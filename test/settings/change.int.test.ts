import { describe, expect, it } from 'vitest';
import { getSettings } from '../../projections/settings.queries.ts';
import { DomainError } from '../../src/domain/errors.ts';
import { SETTINGS_STREAM } from '../../src/domain/settings/events.ts';
import { defaultSettings, type SettingName } from '../../src/domain/settings/state.ts';
import { changeSettings, loadSettings } from '../../src/settings/change.ts';
import { readStream } from '../http/api/client.ts';
import { useTestRuntime } from '../support/runtime.ts';
import { postgresAvailable } from '../support/services.ts';

const hasPg = await postgresAvailable();

/**
 * changeSettings (the settings screen's POST): one SettingsChanged on the `settings` stream with
 * the whole settings after it, read back from the stream and, once it has caught up, from the
 * settings read model. The tests share one stream and run in order.
 */
describe.runIf(hasPg)('changeSettings (PostgreSQL)', () => {
  const suite = useTestRuntime('hookline_settings_change');
  const deps = () => ({ store: suite.runtime.store, clock: suite.runtime.clock });
  const change = (values: Partial<Record<SettingName, number>>, actor: string | null = 'alice') =>
    changeSettings(deps(), { type: 'ChangeSettings', values, actor });
  const events = () => readStream(suite.runtime.store, SETTINGS_STREAM);

  it('before any change: the defaults, from the stream and from the read model', async () => {
    expect(await loadSettings(suite.runtime.store)).toEqual({
      state: { settings: defaultSettings, customized: false, updatedAt: null },
      revision: -1n,
    });
    expect((await getSettings(suite.runtime.db)).settings).toEqual(defaultSettings);
  });

  it('a valid change appends SettingsChanged with the whole settings; it is read back', async () => {
    const { store, db, projections } = suite.runtime;
    const result = await change({ retention_max_rows: 1234, sse_retry_ms: 5000 });
    const expected = { ...defaultSettings, retention_max_rows: 1234, sse_retry_ms: 5000 };
    expect(result.state.settings).toEqual(expected);
    expect(result.state.customized).toBe(true);
    expect(result.position).toBeTypeOf('string');

    const [event] = await events();
    expect(event!.type).toBe('SettingsChanged');
    expect(event!.data).toEqual({
      settings: expected,
      changed: ['retention_max_rows', 'sse_retry_ms'],
      changed_at: result.state.updatedAt,
      changed_by: 'alice',
    });
    const loaded = await loadSettings(store);
    expect(loaded.revision).toBe(0n);
    expect(loaded.state).toEqual(result.state);

    await projections.waitFor(result.position!, { projection: 'settings', timeoutMs: 10_000 });
    const read = await getSettings(db);
    expect(read.settings).toEqual(expected);
    expect(read.changedBy).toBe('alice');
    expect(read.updatedAt?.toISOString()).toBe(result.state.updatedAt);
  });

  it('a change to the values already in force records nothing (position null)', async () => {
    const before = (await events()).length;
    const result = await change({ retention_max_rows: 1234 });
    expect(result.position).toBeNull();
    expect(result.state.settings.retention_max_rows).toBe(1234);
    expect(await events()).toHaveLength(before);
  });

  const invalid: { values: Partial<Record<SettingName, number>>; field: SettingName; message: string }[] = [
    {
      values: { retention_max_rows: -1 },
      field: 'retention_max_rows',
      message: 'retention_max_rows must be at least 0',
    },
    { values: { sse_retry_ms: 100 }, field: 'sse_retry_ms', message: 'sse_retry_ms must be at least 250' },
    {
      values: { retention_max_age_days: 36_501 },
      field: 'retention_max_age_days',
      message: 'retention_max_age_days must be at most 36500',
    },
    {
      values: { sse_retry_ms: 1000.5 },
      field: 'sse_retry_ms',
      message: 'sse_retry_ms must be a whole number',
    },
    // What the form sends for a value it cannot read.
    {
      values: { retention_max_rows: Number.NaN },
      field: 'retention_max_rows',
      message: 'retention_max_rows must be a whole number',
    },
    // One bad value refuses the whole change, the valid one included.
    {
      values: { retention_max_age_days: 7, sse_retry_ms: 0 },
      field: 'sse_retry_ms',
      message: 'sse_retry_ms must be at least 250',
    },
  ];
  for (const { values, field, message } of invalid) {
    it(`refuses ${JSON.stringify(values)} as invalid_setting naming ${field}; nothing is appended`, async () => {
      const before = await loadSettings(suite.runtime.store);
      const refused = await change(values).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(DomainError);
      expect((refused as DomainError).code).toBe('invalid_setting');
      expect((refused as DomainError).extensions).toEqual({ field });
      expect((refused as DomainError).message).toBe(message);
      expect(await loadSettings(suite.runtime.store)).toEqual(before);
    });
  }

  it('two operators saving at once both land: the later decides again on the first, each field kept', async () => {
    const { store, db, projections } = suite.runtime;
    const before = (await events()).length;
    const [a, b] = await Promise.all([
      change({ retention_max_age_days: 90 }, 'alice'),
      change({ sse_retry_ms: 7000 }, 'bob'),
    ]);
    expect(a.position).toBeTypeOf('string');
    expect(b.position).toBeTypeOf('string');
    const after = await events();
    expect(after).toHaveLength(before + 2);
    const expected = {
      ...defaultSettings,
      retention_max_rows: 1234,
      retention_max_age_days: 90,
      sse_retry_ms: 7000,
    };
    // The later event carries the whole settings, the earlier one's field included.
    expect((after.at(-1)!.data as { settings: unknown }).settings).toEqual(expected);
    expect((await loadSettings(store)).state.settings).toEqual(expected);

    const last = store.comparePositions(a.position!, b.position!) > 0 ? a.position! : b.position!;
    await projections.waitFor(last, { projection: 'settings', timeoutMs: 10_000 });
    expect((await getSettings(db)).settings).toEqual(expected);
  });

  it('five saving one field at once: the later ones decide again on what landed, the last value wins', async () => {
    const { store } = suite.runtime;
    const before = (await events()).length;
    const values = [10, 20, 30, 40, 50];
    const results = await Promise.all(values.map((v) => change({ retention_max_age_days: v })));
    expect(results.every((r) => r.position !== null)).toBe(true);
    const after = await events();
    expect(after).toHaveLength(before + 5);
    const landed = after
      .slice(before)
      .map(
        (e) => (e.data as { settings: { retention_max_age_days: number } }).settings.retention_max_age_days,
      );
    expect([...landed].sort((x, y) => x - y)).toEqual(values);
    expect((await loadSettings(store)).state.settings.retention_max_age_days).toBe(landed.at(-1));
  });
});
