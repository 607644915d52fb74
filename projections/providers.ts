import type { ColumnType, Kysely, Selectable } from 'kysely';
import type { Config } from '../src/config.ts';
import type { Database } from '../src/db/database.ts';
import { DELIVERIES_STREAM, DELIVERY_RECEIVED, type TrustMode } from '../src/domain/delivery/metadata.ts';
import { isProviderEventType, type ProviderEvent, parseProviderName } from '../src/domain/provider/index.ts';
import { parseData } from '../src/eventstore/codec.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import { recentCounts } from './log.ts';
import type { Projection } from './types.ts';

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

type NewRow = Omit<Selectable<ProvidersTable>, 'created_at' | 'last_event_at' | 'event_count'>;

/** The row a provider has before anything but its name is known. */
function defaultRow(name: string): NewRow {
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

async function applyProviderEvent(db: Kysely<Database>, e: RecordedEvent): Promise<void> {
  if (!isProviderEventType(e.type)) return;
  const event = { type: e.type, data: parseData(e) } as ProviderEvent;
  switch (event.type) {
    case 'GenericProviderCreated': {
      const d = event.data;
      const row = {
        ...defaultRow(d.name),
        trust_mode: d.trust_mode,
        enabled: false,
        secret_status: d.trust_mode === 'token' ? 'configured' : 'none-by-design',
        token_hash: d.token_hash,
        created_at: new Date(d.created_at),
      };
      await db
        .insertInto('providers')
        .values(row)
        .onConflict((oc) =>
          oc.column('name').doUpdateSet({
            trust_mode: row.trust_mode,
            enabled: false,
            secret_status: row.secret_status,
            token_hash: row.token_hash,
            created_at: row.created_at,
          }),
        )
        .execute();
      return;
    }
    case 'ProviderEnabled':
    case 'ProviderDisabled': {
      const enabled = event.type === 'ProviderEnabled';
      await db
        .insertInto('providers')
        .values({ ...defaultRow(event.data.name), enabled })
        .onConflict((oc) => oc.column('name').doUpdateSet({ enabled }))
        .execute();
      return;
    }
    default: {
      const never: never = event;
      throw new Error(`unhandled provider event ${JSON.stringify(never)}`);
    }
  }
}

const decoder = new TextDecoder();

export const providersProjection: Projection = {
  name: 'providers',
  version: 1,
  tables: ['providers'],
  async createTables(db) {
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
  },
  handles: (e) =>
    (e.streamId === DELIVERIES_STREAM && e.type === DELIVERY_RECEIVED) ||
    (e.streamId.startsWith('provider-') && isProviderEventType(e.type)),
  async apply(db, events) {
    // Counters are summed per batch (one upsert a provider); provider events apply in order.
    const counters = new Map<string, { count: number; last: Date }>();
    for (const e of events) {
      if (e.streamId === DELIVERIES_STREAM && e.type === DELIVERY_RECEIVED) {
        const m = JSON.parse(decoder.decode(e.metadata ?? new Uint8Array())) as {
          provider: string;
          received_at: string;
        };
        const at = new Date(m.received_at);
        const c = counters.get(m.provider);
        if (!c) counters.set(m.provider, { count: 1, last: at });
        else {
          c.count++;
          if (at > c.last) c.last = at;
        }
      } else if (e.streamId.startsWith('provider-')) {
        await applyProviderEvent(db, e);
      }
    }
    for (const [name, c] of counters) {
      await db
        .insertInto('providers')
        .values({ ...defaultRow(name), last_event_at: c.last, event_count: c.count })
        .onConflict((oc) =>
          oc.column('name').doUpdateSet((eb) => ({
            event_count: eb('providers.event_count', '+', c.count),
            last_event_at: eb.fn('greatest', [eb.ref('providers.last_event_at'), eb.val(c.last)]),
          })),
        )
        .execute();
    }
  },
};

/** Spec 2.4 plus the dashboard's counters (spec 4.3, StatusSnapshot of spec 6). */
export interface ProviderListing {
  readonly name: string;
  readonly kind: string;
  readonly family: 'webhook' | 'queue' | 'operator';
  readonly trust_mode: TrustMode;
  readonly enabled: boolean;
  readonly secret_status: SecretStatus;
  /**
   * Whether deliveries can be accepted at all: a signed provider without its secret answers 404
   * whatever `enabled` says. `configure_with` names the variable that configures it.
   */
  readonly configured: boolean;
  readonly configure_with: string | null;
  readonly path: string | null;
  readonly channel: string | null;
  readonly created_at: string | null;
  /**
   * When the provider last delivered, and how many deliveries it made: facts about the provider,
   * which retention does not lower (README "Screens", Retention). `recent_count` (last 24 h) is
   * counted in the log, so it counts only the deliveries still kept.
   */
  readonly last_event_at: string | null;
  readonly event_count: number;
  readonly recent_count: number;
}

const SIGNED = ['codehost', 'payments', 'chat'] as const;
/** The variable whose secret configures each signed provider (README, "Configuration"). */
const SECRET_VARIABLE = {
  codehost: 'HOOKLINE_CODEHOST_SECRET',
  payments: 'HOOKLINE_PAYMENTS_SECRET',
  chat: 'HOOKLINE_CHAT_SECRET',
} as const satisfies Record<(typeof SIGNED)[number], string>;
const KIND_ORDER = ['codehost', 'payments', 'chat', 'broker', 'generic', 'webhook', 'operator'];

/**
 * Every provider: the signed ones and broker channels from the environment (listed whether or not
 * anything happened to them), merged with the `providers` read model, with the count of the last
 * 24 hours from the log.
 */
export async function listProviders(
  config: Config,
  db: Kysely<Database>,
  now: Date = new Date(),
): Promise<ProviderListing[]> {
  const [rows, recent] = await Promise.all([
    db.selectFrom('providers').selectAll().execute(),
    recentCounts(db, new Date(now.getTime() - 24 * 3600_000)),
  ]);
  const byName = new Map(rows.map((r) => [r.name, r]));
  const names = new Set<string>([
    ...SIGNED,
    ...config.broker.channels.map((c) => `broker:${c}`),
    ...byName.keys(),
  ]);
  const out: ProviderListing[] = [];
  for (const name of names) {
    const row = byName.get(name) ?? {
      ...defaultRow(name),
      created_at: null,
      last_event_at: null,
      event_count: 0,
    };
    let secret = (row.secret_status ?? 'none-by-design') as SecretStatus;
    let configureWith: string | null = null;
    if (row.kind === 'codehost' || row.kind === 'payments' || row.kind === 'chat') {
      secret = config.secrets[row.kind].length > 0 ? 'configured' : 'missing';
      configureWith = SECRET_VARIABLE[row.kind];
    }
    out.push({
      name,
      kind: row.kind,
      family: row.family as ProviderListing['family'],
      trust_mode: row.trust_mode as TrustMode,
      enabled: row.enabled,
      secret_status: secret,
      configured: secret !== 'missing',
      configure_with: configureWith,
      path: row.path,
      channel: row.channel,
      created_at: row.created_at ? new Date(row.created_at).toISOString() : null,
      last_event_at: row.last_event_at ? new Date(row.last_event_at).toISOString() : null,
      event_count: Number(row.event_count),
      recent_count: recent.get(name) ?? 0,
    });
  }
  const rank = (k: string) => KIND_ORDER.indexOf(k) + 1 || 99;
  return out.sort((a, b) => rank(a.kind) - rank(b.kind) || a.name.localeCompare(b.name));
}
