import type { Kysely } from 'kysely';

/**
 * The one Database interface (style.md §7), composed from the per-table interfaces that each
 * module declares next to the code that owns the tables. Add a module's tables here.
 */
// biome-ignore lint/suspicious/noEmptyInterface: grows as modules add their tables
export interface Database {}

export type DB = Kysely<Database>;
