import { z } from 'zod';
import type { Clock } from '../../clock.ts';
import { jsonEvent, parseData } from '../../eventstore/codec.ts';
import {
  type EventStore,
  type ExpectedRevision,
  isWrongExpectedVersion,
  type RecordedEvent,
  StreamNotFoundError,
} from '../../eventstore/port.ts';
import { decide, evolve, initialSettingsState, type SettingsCommand, type SettingsState } from './decider.ts';
import { SETTINGS_STREAM, type SettingsEvent } from './events.ts';

const settingsChangedData = z.object({
  settings: z.object({
    retention_max_age_days: z.number().int(),
    retention_max_rows: z.number().int(),
    sse_retry_ms: z.number().int(),
  }),
  changed: z.array(z.enum(['retention_max_age_days', 'retention_max_rows', 'sse_retry_ms'])),
  changed_at: z.string(),
  changed_by: z.string().nullable(),
});

/** Decodes a stored settings event; events of other types (none today) are skipped. */
export function toSettingsEvent(e: Pick<RecordedEvent, 'type' | 'data'>): SettingsEvent | null {
  if (e.type === 'SettingsChanged')
    return { type: 'SettingsChanged', data: settingsChangedData.parse(parseData(e)) };
  return null;
}

export async function loadSettings(
  store: EventStore,
): Promise<{ state: SettingsState; expected: ExpectedRevision }> {
  let state = initialSettingsState;
  let revision = -1n;
  try {
    for await (const recorded of store.readStream(SETTINGS_STREAM)) {
      revision = recorded.revision;
      const event = toSettingsEvent(recorded);
      if (event) state = evolve(state, event);
    }
  } catch (err) {
    if (!(err instanceof StreamNotFoundError)) throw err;
  }
  return { state, expected: revision < 0n ? 'no_stream' : revision };
}

export interface SettingsResult {
  readonly state: SettingsState;
  /** Global position of the append, or null when nothing changed. */
  readonly position: string | null;
}

/**
 * Reads the aggregate, decides and appends with the revision it read. A concurrent change makes
 * the append fail its expected revision; the command is then decided again on the new state
 * (a few times), so two operators saving at once both land, the later one winning per field.
 */
export async function handleSettingsCommand(
  deps: { store: EventStore; clock: Clock },
  command: SettingsCommand,
): Promise<SettingsResult> {
  for (let attempt = 0; ; attempt++) {
    const { state, expected } = await loadSettings(deps.store);
    const events = decide(command, state, deps.clock.now());
    if (events.length === 0) return { state, position: null };
    try {
      const result = await deps.store.append(
        SETTINGS_STREAM,
        events.map((e) => jsonEvent(e.type, e.data)),
        { expectedRevision: expected },
      );
      return { state: events.reduce(evolve, state), position: result.position };
    } catch (err) {
      if (!isWrongExpectedVersion(err) || attempt >= 4) throw err;
    }
  }
}
