import { DomainError } from '../errors.ts';
import type { Decider } from '../shared.ts';
import { SETTINGS_EVENT_TYPES, type SettingsEvent } from './events.ts';
import {
  evolveSettings,
  initialSettingsState,
  isSettingName,
  type SettingName,
  type SettingsState,
  settingBounds,
} from './state.ts';

export interface ChangeSettings {
  readonly type: 'ChangeSettings';
  /** Only the fields given change; values arrive already converted to numbers (NaN if unreadable). */
  readonly values: Readonly<Partial<Record<SettingName, number>>>;
  readonly actor: string | null;
}

export type SettingsCommand = ChangeSettings;

/** Why a value is refused, or null when it is acceptable. */
export function settingProblem(name: SettingName, value: unknown): string | null {
  const { min, max } = settingBounds[name];
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) return `${name} must be a whole number`;
  if (value < min) return `${name} must be at least ${min}`;
  if (value > max) return `${name} must be at most ${max}`;
  return null;
}

/**
 * Validates and decides. A value out of bounds refuses the whole command with `invalid_setting`
 * naming the field (422); a command that changes nothing records nothing.
 */
export function decideSettings(command: SettingsCommand, state: SettingsState, now: Date): SettingsEvent[] {
  switch (command.type) {
    case 'ChangeSettings': {
      const next: Record<SettingName, number> = { ...state.settings };
      const changed: SettingName[] = [];
      for (const [name, value] of Object.entries(command.values)) {
        if (!isSettingName(name) || value === undefined) continue;
        const problem = settingProblem(name, value);
        if (problem) throw new DomainError('invalid_setting', problem, { field: name });
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

export const settingsDecider: Decider<SettingsCommand, SettingsState, SettingsEvent> = {
  initialState: initialSettingsState,
  evolve: evolveSettings,
  decide: decideSettings,
  eventTypes: SETTINGS_EVENT_TYPES,
};
