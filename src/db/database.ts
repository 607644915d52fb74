import type { Kysely } from 'kysely';
import type { LogTables } from '../../projections/log.ts';
import type { ProviderTables } from '../../projections/providers.ts';
import type { SettingsTables } from '../../projections/settings.ts';

/**
 * The one Database interface (style.md §7), composed from the per-table interfaces that each
 * module declares next to the code that owns the tables. Add a module's tables here.
 */
export interface Database extends LogTables, ProviderTables, SettingsTables {}

export type DB = Kysely<Database>;
