import type { Kysely } from 'kysely';
import type { AgentTables } from '../../projections/agents.table.ts';
import type { EndpointTables } from '../../projections/endpoints.table.ts';
import type { FriendTables } from '../../projections/friends.table.ts';
import type { LogTables } from '../../projections/log.table.ts';
import type { ProviderTables } from '../../projections/providers.table.ts';
import type { QuarantineTables } from '../../projections/quarantine.table.ts';
import type { ReplayTables } from '../../projections/replays.table.ts';
import type { SettingsTables } from '../../projections/settings.table.ts';
import type { TodoTables } from '../../projections/todos.table.ts';
import type { WebhookTables } from '../../projections/webhooks.table.ts';
import type { OAuthTables } from '../auth/oauth-tables.ts';

/**
 * The one Database interface (style.md §7), composed from the per-table interfaces that each
 * module declares next to the code that owns the tables. Add a module's tables here.
 */
export interface Database
  extends LogTables,
    ProviderTables,
    OAuthTables,
    AgentTables,
    EndpointTables,
    WebhookTables,
    TodoTables,
    SettingsTables,
    QuarantineTables,
    ReplayTables,
    FriendTables {}

export type DB = Kysely<Database>;
