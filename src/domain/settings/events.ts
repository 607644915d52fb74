import type { SettingName, Settings } from './settings.ts';

/** Every settings decision is one event on this stream (design.md "Streams"). */
export const SETTINGS_STREAM = 'settings';

export interface SettingsChanged {
  readonly type: 'SettingsChanged';
  readonly data: {
    /** The complete settings after the change, so a reader never needs the history. */
    readonly settings: Settings;
    readonly changed: readonly SettingName[];
    readonly changed_at: string;
    /** Who asked, when forward authentication names a human; null otherwise. */
    readonly changed_by: string | null;
  };
}

export type SettingsEvent = SettingsChanged;

export const settingsEventTypes: readonly SettingsEvent['type'][] = ['SettingsChanged'];
