import type { Kysely } from 'kysely';
import type { Config } from '../src/config.ts';
import type { Database } from '../src/db/database.ts';
import type { TrustMode } from '../src/domain/delivery/events.ts';
import { recentCounts } from './log.queries.ts';
import { defaultRow, type SecretStatus } from './providers.table.ts';

/** What the providers screen, the dashboard and the live status read. */
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
   * which retention does not lower (docs/reference/screens.md, Retention). `recent_count` (last 24 h) is
   * counted in the log, so it counts only the deliveries still kept.
   */
  readonly last_event_at: string | null;
  readonly event_count: number;
  readonly recent_count: number;
}

const SIGNED = ['codehost', 'payments', 'chat'] as const;
/** The variable whose secret configures each signed provider (docs/reference/configuration.md). */
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

/** Every provider name the log can filter by: the configured ones first, then the read model's. */
export async function providerNames(config: Config, db: Kysely<Database>): Promise<string[]> {
  const rows = await db.selectFrom('providers').select('name').execute();
  const configured = [...SIGNED, ...config.broker.channels.map((c) => `broker:${c}`)];
  const rest = rows.map((r) => r.name).filter((n) => !configured.includes(n));
  return [...configured, ...rest.sort()];
}
