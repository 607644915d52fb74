import { describe, expect, it } from 'vitest';
import {
  decide,
  evolve,
  initialSettingsState,
  type SettingsCommand,
  type SettingsState,
} from '../../src/domain/settings/decider.ts';
import type { SettingsEvent } from '../../src/domain/settings/events.ts';
import { defaultSettings } from '../../src/domain/settings/settings.ts';
import { HooklineError } from '../../src/errors.ts';

const now = new Date('2026-01-02T03:04:05.000Z');

/** Given events, when a command, then events (style.md §2). */
function given(...events: SettingsEvent[]) {
  const state = events.reduce<SettingsState>(evolve, initialSettingsState);
  return {
    when: (command: SettingsCommand) => ({
      thenEvents: (expected: SettingsEvent[]) => expect(decide(command, state, now)).toEqual(expected),
      thenRefused: (field: string, message: RegExp) => {
        let error: unknown;
        try {
          decide(command, state, now);
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(HooklineError);
        const he = error as HooklineError;
        expect(he.code).toBe('invalid_setting');
        expect(he.status).toBe(422);
        expect(he.extensions.field).toBe(field);
        expect(he.message).toMatch(message);
      },
    }),
  };
}

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
    expect(initialSettingsState.settings).toEqual({
      retention_max_age_days: 30,
      retention_max_rows: 50_000,
      sse_retry_ms: 3000,
    });
    expect(initialSettingsState.customized).toBe(false);
  });

  it('records a change of one field with the full settings after it', () => {
    given()
      .when(change({ sse_retry_ms: 1000 }))
      .thenEvents([changed({ sse_retry_ms: 1000 }, ['sse_retry_ms'])]);
  });

  it('records nothing when the values are already in force', () => {
    given(changed({ retention_max_rows: 10 }, ['retention_max_rows']))
      .when(change({ retention_max_rows: 10, sse_retry_ms: 3000 }))
      .thenEvents([]);
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
    const [event] = decide(change({ sse_retry_ms: 400 }, 'ada'), initialSettingsState, now);
    expect(event?.data.changed_by).toBe('ada');
  });

  it('evolves to the recorded settings', () => {
    const state = evolve(initialSettingsState, changed({ retention_max_rows: 7 }, ['retention_max_rows']));
    expect(state.settings.retention_max_rows).toBe(7);
    expect(state.customized).toBe(true);
    expect(state.updatedAt).toBe(now.toISOString());
  });
});
