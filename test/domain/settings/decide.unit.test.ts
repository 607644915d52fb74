import { describe, expect, it } from 'vitest';
import { type SettingsCommand, settingsDecider } from '../../../src/domain/settings/decide.ts';
import type { SettingsEvent } from '../../../src/domain/settings/events.ts';
import { defaultSettings } from '../../../src/domain/settings/state.ts';
import { errorCatalog } from '../../../src/errors.ts';
import { deciderSpec } from '../../support/decider-spec.ts';

const now = new Date('2026-01-02T03:04:05.000Z');
const spec = deciderSpec(settingsDecider, now);

/** Given events, when a command, then events or a refusal naming the field (422). */
const given = (...events: SettingsEvent[]) => {
  const g = spec.given(...events);
  return {
    state: g.state,
    when: (command: SettingsCommand) => {
      const w = g.when(command);
      return {
        ...w,
        thenRefused: (field: string, message: RegExp) => {
          const refused = w.thenThrows('invalid_setting', message);
          expect(errorCatalog[refused.code].status).toBe(422);
          expect(refused.extensions.field).toBe(field);
        },
      };
    },
  };
};

const change = (values: SettingsCommand['values'], actor: string | null = null): SettingsCommand => ({
  type: 'ChangeSettings',
  values,
  actor,
});

const changed = (
  settings: Partial<typeof defaultSettings>,
  fields: SettingsEvent['data']['changed'],
): SettingsEvent => ({
  type: 'SettingsChanged',
  data: {
    settings: { ...defaultSettings, ...settings },
    changed: fields,
    changed_at: now.toISOString(),
    changed_by: null,
  },
});

describe('settings aggregate', () => {
  it('starts from the defaults of spec 2.6', () => {
    expect(given().state().settings).toEqual({
      retention_max_age_days: 30,
      retention_max_rows: 50_000,
      sse_retry_ms: 3000,
    });
    expect(given().state().customized).toBe(false);
  });

  it('records a change of one field with the full settings after it', () => {
    given()
      .when(change({ sse_retry_ms: 1000 }))
      .thenEvents([changed({ sse_retry_ms: 1000 }, ['sse_retry_ms'])]);
  });

  it('records nothing when the values are already in force', () => {
    given(changed({ retention_max_rows: 10 }, ['retention_max_rows']))
      .when(change({ retention_max_rows: 10, sse_retry_ms: 3000 }))
      .thenNothing();
  });

  it('names only the fields that changed, and keeps the earlier changes', () => {
    given(changed({ retention_max_rows: 10 }, ['retention_max_rows']))
      .when(change({ retention_max_age_days: 0, retention_max_rows: 10 }))
      .thenEvents([
        changed({ retention_max_rows: 10, retention_max_age_days: 0 }, ['retention_max_age_days']),
      ]);
  });

  it('accepts the lower bounds: 0 days, 0 rows (unlimited) and a 250 ms retry', () => {
    given()
      .when(change({ retention_max_age_days: 0, retention_max_rows: 0, sse_retry_ms: 250 }))
      .thenEvents([
        changed({ retention_max_age_days: 0, retention_max_rows: 0, sse_retry_ms: 250 }, [
          'retention_max_age_days',
          'retention_max_rows',
          'sse_retry_ms',
        ]),
      ]);
  });

  it('refuses a retry below 250 ms, naming the field', () => {
    given()
      .when(change({ sse_retry_ms: 249 }))
      .thenRefused('sse_retry_ms', /at least 250/);
  });

  it('refuses negative retention values, naming the field', () => {
    given()
      .when(change({ retention_max_age_days: -1 }))
      .thenRefused('retention_max_age_days', /at least 0/);
    given()
      .when(change({ retention_max_rows: -5 }))
      .thenRefused('retention_max_rows', /at least 0/);
  });

  it('refuses a value that is not a whole number', () => {
    given()
      .when(change({ retention_max_rows: Number.NaN }))
      .thenRefused('retention_max_rows', /whole number/);
    given()
      .when(change({ sse_retry_ms: 1500.5 }))
      .thenRefused('sse_retry_ms', /whole number/);
  });

  it('refuses the whole command when one value is invalid', () => {
    given()
      .when(change({ retention_max_rows: 5, sse_retry_ms: 10 }))
      .thenRefused('sse_retry_ms', /at least 250/);
  });

  it('refuses values beyond the documented maxima', () => {
    given()
      .when(change({ sse_retry_ms: 3_600_001 }))
      .thenRefused('sse_retry_ms', /at most/);
  });

  it('ignores fields that are not settings (replay_default_target is gone since 0.4.0)', () => {
    const values = { replay_default_target: 5, sse_retry_ms: 500 } as unknown as SettingsCommand['values'];
    given()
      .when(change(values))
      .thenEvents([changed({ sse_retry_ms: 500 }, ['sse_retry_ms'])]);
  });

  it('carries the actor who asked', () => {
    const [event] = given()
      .when(change({ sse_retry_ms: 400 }, 'ada'))
      .events();
    expect(event?.data.changed_by).toBe('ada');
  });

  it('evolves to the recorded settings', () => {
    const state = given(changed({ retention_max_rows: 7 }, ['retention_max_rows'])).state();
    expect(state.settings.retention_max_rows).toBe(7);
    expect(state.customized).toBe(true);
    expect(state.updatedAt).toBe(now.toISOString());
  });
});
