import { type CommandDeps, handleCommand, readAggregate } from '../commands/handle-command.ts';
import { type SettingsCommand, settingsDecider } from '../domain/settings/decide.ts';
import { SETTINGS_STREAM } from '../domain/settings/events.ts';
import type { SettingsState } from '../domain/settings/state.ts';

export interface SettingsResult {
  readonly state: SettingsState;
  /** Global position of the append, or null when nothing changed. */
  readonly position: string | null;
}

export const loadSettings = (store: CommandDeps['store']) =>
  readAggregate(store, SETTINGS_STREAM, settingsDecider);

/**
 * Changes the instance settings. Two operators saving at once both land: the later one is decided
 * again on the state the first produced, and wins per field.
 */
export async function changeSettings(deps: CommandDeps, command: SettingsCommand): Promise<SettingsResult> {
  const result = await handleCommand(deps, SETTINGS_STREAM, settingsDecider, command, { retries: 4 });
  return { state: result.state, position: result.position ?? null };
}
