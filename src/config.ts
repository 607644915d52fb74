import path from 'node:path';
import { z } from 'zod';

/** Where the event log and the read models live; follows from the two URLs (design.md). */
export type StorageMode = 'embedded' | 'server' | 'scale-out';

/** A comma-separated list, each item trimmed of surrounding white space (secrets included). */
const csv = z
  .string()
  .optional()
  .transform((raw) =>
    (raw ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
  );

/** Several secrets of one provider mean rotation: any one of them verifies. */
const secretList = csv;

/**
 * An integer variable within [min, max]. Every refusal (not a number, a fraction, out of range)
 * says the whole expectation, where zod's own words would say only "received NaN" or ">=1".
 */
function intIn(min: number, max: number, what: string) {
  const error = `expected ${what}: an integer from ${min} to ${max}`;
  return z.coerce.number({ error }).int({ error }).min(min, { error }).max(max, { error });
}

/** A variable that must be set to something when set at all. */
const nonEmpty = (what: string) => z.string().min(1, { error: `expected ${what}, not an empty value` });

/**
 * Every environment variable hookline reads. The table of docs/reference/configuration.md mirrors this
 * schema; keep the two in step. Each check carries its expectation in words (a ConfigError
 * shows it after the variable's name), never a bare "Invalid URL" or a raw regular expression.
 */
export const envSchema = z
  .object({
    HOOKLINE_HOST: nonEmpty('an address to listen on, such as 127.0.0.1 or 0.0.0.0').default('127.0.0.1'),
    HOOKLINE_PORT: intIn(0, 65535, 'a TCP port').default(8080),
    HOOKLINE_BASE_URL: z
      .url({
        protocol: /^https?$/,
        error: 'expected an http(s) URL such as http://127.0.0.1:8080 or https://hooks.example.com',
      })
      .optional(),
    HOOKLINE_DATA_DIR: nonEmpty('a directory path, such as ./data').default('./data'),
    DATABASE_URL: z
      .url({
        protocol: /^postgres(ql)?$/,
        error: 'expected a postgres:// or postgresql:// URL such as postgres://user@127.0.0.1:5432/hookline',
      })
      .optional(),
    HOOKLINE_EVENTSTORE_URL: z
      .string()
      .regex(/^(esdb|kurrentdb|kdb)(\+discover)?:\/\//, {
        error:
          'expected an EventStoreDB/KurrentDB connection string starting with esdb://, kurrentdb:// or kdb:// (or esdb+discover:// and so on), such as esdb://127.0.0.1:2113?tls=false',
      })
      .optional(),
    HOOKLINE_LOG_LEVEL: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
        error: 'expected one of fatal, error, warn, info, debug, trace, silent',
      })
      .default('info'),
    HOOKLINE_LOG_FORMAT: z
      .enum(['pretty', 'json'], {
        error: 'expected pretty (lines for a person) or json (one JSON object a line)',
      })
      .optional(),
    HOOKLINE_CODEHOST_SECRET: secretList,
    HOOKLINE_PAYMENTS_SECRET: secretList,
    HOOKLINE_CHAT_SECRET: secretList,
    HOOKLINE_SIGNATURE_TOLERANCE_S: intIn(1, 86_400, 'a number of seconds').default(300),
    HOOKLINE_MAX_BODY_BYTES: intIn(1024, 64 * 1024 * 1024, 'a number of bytes').default(5 * 1024 * 1024),
    HOOKLINE_TRUSTED_PROXIES: csv,
    HOOKLINE_OPERATOR: z
      .string()
      .regex(/^[A-Za-z0-9._@-]{1,64}$/, {
        error:
          "expected an operator name of 1 to 64 letters, digits, '.', '_', '@' or '-' (no spaces), such as admin",
      })
      .default('admin'),
    HOOKLINE_AUTH_USER_HEADER: z
      .string()
      .regex(/^[A-Za-z0-9-]+$/, {
        error: "expected an HTTP header name of letters, digits and '-', such as X-Forwarded-User",
      })
      .optional()
      .transform((h) => h?.toLowerCase()),
    HOOKLINE_BROKER_URL: z
      .url({
        protocol: /^rediss?$/,
        error: 'expected a redis:// or rediss:// URL such as redis://127.0.0.1:6379',
      })
      .optional(),
    HOOKLINE_BROKER_CHANNELS: csv,
    HOOKLINE_BROKER_CLAIM_IDLE_MS: intIn(100, 86_400_000, 'a number of milliseconds').default(30_000),
    HOOKLINE_SECRET_KEY: z
      .string()
      .regex(/^[A-Za-z0-9+/=_-]{43,}$/, {
        error:
          'expected a key of 43 or more base64 or base64url characters (32 bytes or more), such as the output of `openssl rand -base64 32`',
      })
      .optional(),
    HOOKLINE_RECEIVER_RATE_LIMIT: intIn(
      0,
      1_000_000,
      'a number of requests (0 turns the limit off)',
    ).optional(),
    HOOKLINE_RECEIVER_RATE_WINDOW_S: intIn(1, 86_400, 'a number of seconds').default(60),
    HOOKLINE_A2A_RATE_LIMIT: intIn(0, 1_000_000, 'a number of requests (0 turns the limit off)').optional(),
    HOOKLINE_A2A_RATE_WINDOW_S: intIn(1, 86_400, 'a number of seconds').default(60),
    HOOKLINE_SHUTDOWN_TIMEOUT_MS: intIn(0, 600_000, 'a number of milliseconds').default(10_000),
  })
  .superRefine((env, ctx) => {
    if (env.HOOKLINE_EVENTSTORE_URL && !env.DATABASE_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['HOOKLINE_EVENTSTORE_URL'],
        message:
          'HOOKLINE_EVENTSTORE_URL needs DATABASE_URL as well: scale-out keeps the event log in EventStoreDB and the read models in PostgreSQL',
      });
    }
    if (env.HOOKLINE_BROKER_CHANNELS.length > 0 && !env.HOOKLINE_BROKER_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['HOOKLINE_BROKER_CHANNELS'],
        message: 'HOOKLINE_BROKER_CHANNELS needs HOOKLINE_BROKER_URL (a redis:// URL)',
      });
    }
  });

export type Env = z.infer<typeof envSchema>;

export interface Config {
  readonly mode: StorageMode;
  readonly host: string;
  readonly port: number;
  readonly baseUrl: string;
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
  readonly eventStoreUrl: string | undefined;
  readonly logLevel: Env['HOOKLINE_LOG_LEVEL'];
  /** Unset: pretty when standard output is a terminal, JSON otherwise. */
  readonly logFormat: Env['HOOKLINE_LOG_FORMAT'];
  readonly secrets: Readonly<{
    codehost: readonly string[];
    payments: readonly string[];
    chat: readonly string[];
  }>;
  readonly signatureToleranceS: number;
  readonly maxBodyBytes: number;
  readonly trustedProxies: readonly string[];
  readonly operator: string;
  readonly authUserHeader: string | undefined;
  readonly broker: Readonly<{
    url: string | undefined;
    channels: readonly string[];
    /** Entries pending this long with a dead consumer are claimed (XAUTOCLAIM). */
    claimIdleMs: number;
  }>;
  readonly secretKey: string | undefined;
  /**
   * Requests each source address may make to the receivers per window; 0 is no limit. Unset:
   * no limit when listening on a loopback address (a laptop), 600 a minute otherwise.
   */
  readonly receiverRateLimit: Readonly<{ max: number; windowS: number }>;
  /**
   * Requests each source address may make to the A2A surface (`/a2a/...`: Agent Cards and friend
   * requests) per window; 0 is no limit. Unset: no limit on a loopback address, 60 a minute otherwise.
   */
  readonly a2aRateLimit: Readonly<{ max: number; windowS: number }>;
  readonly shutdownTimeoutMs: number;
  readonly version: string;
}

export class ConfigError extends Error {
  readonly issues: readonly string[];
  constructor(issues: string[]) {
    super(`invalid configuration:\n${issues.map((i) => `  - ${i}`).join('\n')}`);
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** The receivers' limit per source address and minute when listening beyond loopback. */
export const DEFAULT_RECEIVER_RATE_LIMIT = 600;

/** The A2A surface's limit per source address and minute when listening beyond loopback. */
export const DEFAULT_A2A_RATE_LIMIT = 60;

/** 127.0.0.0/8, ::1 and localhost: only this machine can connect. */
export const isLoopbackAddress = (host: string): boolean =>
  /^(localhost|127(\.\d{1,3}){3}|::1|\[::1\])$/i.test(host);

/** Parses the environment once. A bad value throws a ConfigError naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, version = '0.0.0'): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const name = String(issue.path[0] ?? 'environment');
        const got = typeof issue.path[0] === 'string' ? env[issue.path[0]] : undefined;
        const shown = got === undefined ? '' : ` (got ${JSON.stringify(redactForMessage(name, got))})`;
        return `${name}: ${issue.message}${shown}`;
      }),
    );
  }
  const e = parsed.data;
  const mode: StorageMode = e.HOOKLINE_EVENTSTORE_URL ? 'scale-out' : e.DATABASE_URL ? 'server' : 'embedded';
  const host = e.HOOKLINE_HOST;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  const baseUrl = (e.HOOKLINE_BASE_URL ?? `http://${urlHost}:${e.HOOKLINE_PORT}`).replace(/\/+$/, '');
  return deepFreeze({
    mode,
    host,
    port: e.HOOKLINE_PORT,
    baseUrl,
    dataDir: path.resolve(e.HOOKLINE_DATA_DIR),
    databaseUrl: e.DATABASE_URL,
    eventStoreUrl: e.HOOKLINE_EVENTSTORE_URL,
    logLevel: e.HOOKLINE_LOG_LEVEL,
    logFormat: e.HOOKLINE_LOG_FORMAT,
    secrets: {
      codehost: e.HOOKLINE_CODEHOST_SECRET,
      payments: e.HOOKLINE_PAYMENTS_SECRET,
      chat: e.HOOKLINE_CHAT_SECRET,
    },
    signatureToleranceS: e.HOOKLINE_SIGNATURE_TOLERANCE_S,
    maxBodyBytes: e.HOOKLINE_MAX_BODY_BYTES,
    trustedProxies: e.HOOKLINE_TRUSTED_PROXIES,
    operator: e.HOOKLINE_OPERATOR,
    authUserHeader: e.HOOKLINE_AUTH_USER_HEADER,
    broker: {
      url: e.HOOKLINE_BROKER_URL,
      channels: e.HOOKLINE_BROKER_CHANNELS,
      claimIdleMs: e.HOOKLINE_BROKER_CLAIM_IDLE_MS,
    },
    secretKey: e.HOOKLINE_SECRET_KEY,
    receiverRateLimit: {
      max: e.HOOKLINE_RECEIVER_RATE_LIMIT ?? (isLoopbackAddress(host) ? 0 : DEFAULT_RECEIVER_RATE_LIMIT),
      windowS: e.HOOKLINE_RECEIVER_RATE_WINDOW_S,
    },
    a2aRateLimit: {
      max: e.HOOKLINE_A2A_RATE_LIMIT ?? (isLoopbackAddress(host) ? 0 : DEFAULT_A2A_RATE_LIMIT),
      windowS: e.HOOKLINE_A2A_RATE_WINDOW_S,
    },
    shutdownTimeoutMs: e.HOOKLINE_SHUTDOWN_TIMEOUT_MS,
    version,
  });
}

/** Error messages never echo a secret or a credential-bearing URL. */
function redactForMessage(name: string, value: string): string {
  if (/SECRET|KEY/.test(name)) return '«redacted»';
  if (/URL$/.test(name)) return value.replace(/\/\/[^@/]*@/, '//«redacted»@');
  return value;
}

/**
 * The HOOKLINE_* variables read outside the schema: by the command-line client and the test suite
 * (docs/reference/configuration.md, "CLI and test variables"). Known, so never reported as unknown.
 */
export const clientAndTestVariables: readonly string[] = Object.freeze([
  'HOOKLINE_URL',
  'HOOKLINE_SERVER',
  'HOOKLINE_TEST_EVENTSTORE_URL',
  'HOOKLINE_TEST_PG_URL',
  'HOOKLINE_TEST_REDIS_URL',
  'HOOKLINE_TEST_LOG',
]);

/**
 * Set by deployments of releases before 0.3.0 and ignored silently (spec 9, release 0.3.0 item 2):
 * `<SERVICE>_LEGACY_RECEIVER_ENDPOINT_ID`, and `<SERVICE>_<KIND>_SECRET` for a kind hookline does
 * not serve (a self-hosted code host). Such a name is reported only when it looks like a typo of a
 * known one.
 */
const legacyVariable = (name: string): boolean =>
  name === 'HOOKLINE_LEGACY_RECEIVER_ENDPOINT_ID' || name.endsWith('_SECRET');

/** Edit distance with adjacent transpositions (optimal string alignment): PROT is one from PORT. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const row = d[i]!;
      row[j] = Math.min(d[i - 1]![j]! + 1, row[j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j]!, d[i - 2]![j - 2]! + 1);
      }
    }
  }
  return d[a.length]![b.length]!;
}

export interface UnknownVariable {
  readonly name: string;
  /** The known variable it most likely meant, when one is close enough to be a typo. */
  readonly closest: string | undefined;
}

/**
 * The HOOKLINE_* variables set in `env` that hookline does not read, each with the closest known
 * name (a typo such as HOOKLINE_PROT names HOOKLINE_PORT). A warning, never an error: the start goes on.
 */
export function unknownVariables(env: NodeJS.ProcessEnv): UnknownVariable[] {
  const known = [...Object.keys(envSchema.shape), ...clientAndTestVariables];
  const out: UnknownVariable[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('HOOKLINE_') || known.includes(name)) continue;
    const ranked = known
      // DATABASE_URL is read without the prefix: HOOKLINE_DATABASE_URL means it.
      .map((k) => ({ k, distance: editDistance(name, k.startsWith('HOOKLINE_') ? k : `HOOKLINE_${k}`) }))
      .sort((x, y) => x.distance - y.distance || x.k.localeCompare(y.k));
    const best = ranked[0];
    const close = best && best.distance <= Math.max(2, Math.floor(name.length / 6)) ? best.k : undefined;
    if (close === undefined && legacyVariable(name)) continue;
    out.push({ name, closest: close });
  }
  return out;
}
