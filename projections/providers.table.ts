import type { ColumnType, Kysely, Selectable } from 'kysely';
import { parseProviderName } from '../src/domain/provider/names.ts';

export type SecretStatus = 'configured' | 'missing' | 'none-by-design';

/**
 * One row per provider that has been created, toggled or has received a delivery. `kind` is the
 * receiver kind, the prefix of the name: codehost, payments, chat, generic, broker, webhook,
 * operator. Signed and broker providers also exist without a row (from the environment):
 * `listProviders` merges both.
 */
export interface ProvidersTable {
  name: string;
  kind: string;
  family: string;
  trust_mode: string;
  enabled: boolean;
  /** Known for generic providers only; the environment decides it for the others. */
  secret_status: string | null;
  path: string | null;
  channel: string | null;
  /** Generic `token` providers: SHA-256 hex of the token. */
  token_hash: string | null;
  created_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  last_event_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  event_count: ColumnType<bigint | number, number | undefined, number>;
}

export interface ProviderTables {
  providers: ProvidersTable;
}

export type NewRow = Omit<Selectable<ProvidersTable>, 'created_at' | 'last_event_at' | 'event_count'>;

/** The row a provider has before anything but its name is known. */
export function defaultRow(name: string): NewRow {
  const p = parseProviderName(name);
  const kind = p?.kind ?? 'unknown';
  const base = {
    name,
    kind,
    enabled: true,
    secret_status: null,
    path: null,
    channel: null,
    token_hash: null,
  };
  switch (kind) {
    case 'codehost':
    case 'payments':
    case 'chat':
      return { ...base, family: 'webhook', trust_mode: 'signed', path: `/webhooks/${kind}` };
    case 'generic':
      return { ...base, family: 'webhook', trust_mode: 'token', path: `/webhooks/generic/${p!.suffix}` };
    case 'broker':
      return {
        ...base,
        family: 'queue',
        trust_mode: 'queue',
        channel: p!.suffix,
        secret_status: 'none-by-design',
      };
    case 'operator':
      return { ...base, family: 'operator', trust_mode: 'operator', secret_status: 'none-by-design' };
    default:
      return { ...base, family: 'webhook', trust_mode: 'token' };
  }
}

/** Creates the tables and their indexes (a rebuild creates them afresh in its shadow schema). */
export async function createProviderTables(db: Pick<Kysely<unknown>, 'schema'>): Promise<void> {
  await db.schema
    .createTable('providers')
    .ifNotExists()
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('family', 'text', (c) => c.notNull())
    .addColumn('trust_mode', 'text', (c) => c.notNull())
    .addColumn('enabled', 'boolean', (c) => c.notNull())
    .addColumn('secret_status', 'text')
    .addColumn('path', 'text')
    .addColumn('channel', 'text')
    .addColumn('token_hash', 'text')
    .addColumn('created_at', 'timestamptz')
    .addColumn('last_event_at', 'timestamptz')
    .addColumn('event_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
}
