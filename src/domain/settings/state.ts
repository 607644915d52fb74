import { SETTING_NAMES, type SettingsEvent } from './events.ts';

/**
 * The mutable instance settings of spec 2.6. `replay_default_target` was removed in release
 * 0.4.0 and is not a setting here (design.md "Versions of the contract").
 */
export interface Settings {
  /** Deliveries older than this many days are pruned; 0 = keep forever. */
  readonly retention_max_age_days: number;
  /** At most this many deliveries are kept; 0 = unlimited. */
  readonly retention_max_rows: number;
  /** The `retry:` advertised on the SSE stream, read at each (re)connect. */
  readonly sse_retry_ms: number;
}

export type SettingName = keyof Settings;

export const settingNames: readonly SettingName[] = SETTING_NAMES;

export const defaultSettings: Settings = Object.freeze({
  retention_max_age_days: 30,
  retention_max_rows: 50_000,
  sse_retry_ms: 3000,
});

/**
 * Lower bounds from the spec. The spec gives no upper bounds; ours keep values meaningful
 * (a century of retention, a billion rows, an hour between reconnects) and are documented.
 */
export const settingBounds: Readonly<Record<SettingName, { min: number; max: number; unit: string }>> = {
  retention_max_age_days: { min: 0, max: 36_500, unit: 'days' },
  retention_max_rows: { min: 0, max: 1_000_000_000, unit: 'rows' },
  sse_retry_ms: { min: 250, max: 3_600_000, unit: 'ms' },
};

export const isSettingName = (name: string): name is SettingName =>
  (settingNames as readonly string[]).includes(name);

export interface SettingsState {
  readonly settings: Settings;
  /** Set once any SettingsChanged was applied: the settings are no longer the defaults. */
  readonly customized: boolean;
  readonly updatedAt: string | null;
}

export const initialSettingsState = (): SettingsState => ({
  settings: defaultSettings,
  customized: false,
  updatedAt: null,
});

export function evolveSettings(_state: SettingsState, event: SettingsEvent): SettingsState {
  switch (event.type) {
    case 'SettingsChanged':
      return {
        settings: { ...defaultSettings, ...event.data.settings },
        customized: true,
        updatedAt: event.data.changed_at,
      };
    default: {
      const unknownEvent: never = event.type;
      throw new Error(`unknown settings event ${String(unknownEvent)}`);
    }
  }
}
