import { HooklineError } from '../../errors.ts';
import type { SettingsEvent } from './events.ts';
import {
  defaultSettings,
  isSettingName,
  type SettingName,
  type Settings,
  settingProblem,
} from './settings.ts';

export interface ChangeSettings {
  readonly type: 'ChangeSettings';
  /** Only the fields given change; values arrive already converted to numbers (NaN if unreadable). */
  readonly values: Readonly<Partial<Record<SettingName, number>>>;
  readonly actor: string | null;
}

export type SettingsCommand = ChangeSettings;

export interface SettingsState {
  readonly settings: Settings;
  /** Set once any SettingsChanged was applied: the settings are no longer the defaults. */
  readonly customized: boolean;
  readonly updatedAt: string | null;
}

export const initialSettingsState: SettingsState = {
  settings: defaultSettings,
  customized: false,
  updatedAt: null,
};

/**
 * Validates and decides. A value out of bounds refuses the whole command with `invalid_setting`
 * naming the field (422); a command that changes nothing records nothing.
 */
export function decide(command: SettingsCommand, state: SettingsState, now: Date): SettingsEvent[] {
  switch (command.type) {
    case 'ChangeSettings': {
      const next: Record<SettingName, number> = { ...state.settings };
      const changed: SettingName[] = [];
      for (const [name, value] of Object.entries(command.values)) {
        if (!isSettingName(name) || value === undefined) continue;
        const problem = settingProblem(name, value);
        if (problem) throw new HooklineError('invalid_setting', problem, { field: name });
        if (state.settings[name] !== value) {
          next[name] = value;
          changed.push(name);
        }
      }
      if (changed.length === 0) return [];
      return [
        {
          type: 'SettingsChanged',
          data: { settings: next, changed, changed_at: now.toISOString(), changed_by: command.actor },
        },
      ];
    }
    default: {
      const unknownCommand: never = command.type;
      throw new Error(`unknown settings command ${String(unknownCommand)}`);
    }
  }
}

export function evolve(_state: SettingsState, event: SettingsEvent): SettingsState {
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
