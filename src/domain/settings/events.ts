import { z } from 'zod';
import { defineEvent, typesOf } from '../shared.ts';

/** The settings of spec 2.6, by name (state.ts holds their values and bounds). */
export const SETTING_NAMES = ['retention_max_age_days', 'retention_max_rows', 'sse_retry_ms'] as const;

/** Every settings decision is one event on this stream (design.md "Streams"). */
export const SETTINGS_STREAM = 'settings';

export const SettingsChanged = defineEvent(
  'SettingsChanged',
  z.object({
    /** The complete settings after the change, so a reader never needs the history. */
    settings: z.object({
      retention_max_age_days: z.number().int(),
      retention_max_rows: z.number().int(),
      sse_retry_ms: z.number().int(),
    }),
    changed: z.array(z.enum(SETTING_NAMES)),
    changed_at: z.string(),
    /** Who asked, when forward authentication names a human; null otherwise. */
    changed_by: z.string().nullable(),
  }),
);

export const settingsEvents = [SettingsChanged] as const;
export type SettingsEvent = z.infer<(typeof settingsEvents)[number]>;
export const SETTINGS_EVENT_TYPES = typesOf(settingsEvents);
