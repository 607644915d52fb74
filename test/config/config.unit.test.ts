import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Config, ConfigError, envSchema, loadConfig } from '../../src/config.ts';

/** Loads a config from exactly these variables (never the test process's own environment). */
const load = (env: Record<string, string>): Config => loadConfig(env, '9.9.9');

function issuesOf(env: Record<string, string>): readonly string[] {
  try {
    load(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`);
}

const secretKey = 'k'.repeat(43);

/**
 * One row per variable of the schema: a good value and what it parses to, and (where the schema
 * can refuse one) a bad value. A new variable without a row fails the coverage test below.
 */
const cases: Record<
  string,
  {
    good: [string, (c: Config) => unknown, unknown];
    /** A refused value and what its message must say was expected. */
    bad?: [string, RegExp];
    extra?: Record<string, string>;
  }
> = {
  HOOKLINE_HOST: {
    good: ['0.0.0.0', (c) => c.host, '0.0.0.0'],
    bad: ['', /expected an address to listen on, such as 127\.0\.0\.1/],
  },
  HOOKLINE_PORT: {
    good: ['9090', (c) => c.port, 9090],
    bad: ['80a', /expected a TCP port: an integer from 0 to 65535/],
  },
  HOOKLINE_BASE_URL: {
    good: ['https://hooks.example.com/', (c) => c.baseUrl, 'https://hooks.example.com'],
    bad: ['ftp://hooks.example.com', /expected an http\(s\) URL such as http:\/\/127\.0\.0\.1:8080/],
  },
  HOOKLINE_DATA_DIR: {
    good: ['/var/lib/hookline', (c) => c.dataDir, '/var/lib/hookline'],
    bad: ['', /expected a directory path/],
  },
  DATABASE_URL: {
    good: ['postgres://u@db:5432/hookline', (c) => c.databaseUrl, 'postgres://u@db:5432/hookline'],
    bad: ['mysql://u@db/hookline', /expected a postgres:\/\/ or postgresql:\/\/ URL/],
  },
  HOOKLINE_EVENTSTORE_URL: {
    good: ['esdb://es:2113?tls=false', (c) => c.eventStoreUrl, 'esdb://es:2113?tls=false'],
    bad: ['http://es:2113', /expected an EventStoreDB\/KurrentDB connection string starting with esdb:\/\//],
    extra: { DATABASE_URL: 'postgres://u@db/hookline' },
  },
  HOOKLINE_LOG_LEVEL: {
    good: ['debug', (c) => c.logLevel, 'debug'],
    bad: ['loud', /expected one of fatal, error, warn, info, debug, trace, silent/],
  },
  HOOKLINE_LOG_FORMAT: {
    good: ['json', (c) => c.logFormat, 'json'],
    bad: ['plain', /expected pretty \(lines for a person\) or json/],
  },
  HOOKLINE_CODEHOST_SECRET: { good: [' a , b ,,', (c) => c.secrets.codehost, ['a', 'b']] },
  HOOKLINE_PAYMENTS_SECRET: { good: ['whsec_1', (c) => c.secrets.payments, ['whsec_1']] },
  HOOKLINE_CHAT_SECRET: { good: ['  s3  ', (c) => c.secrets.chat, ['s3']] },
  HOOKLINE_SIGNATURE_TOLERANCE_S: {
    good: ['60', (c) => c.signatureToleranceS, 60],
    bad: ['0', /expected a number of seconds: an integer from 1 to 86400/],
  },
  HOOKLINE_MAX_BODY_BYTES: {
    good: ['1048576', (c) => c.maxBodyBytes, 1048576],
    bad: ['100', /expected a number of bytes: an integer from 1024 to 67108864/],
  },
  HOOKLINE_TRUSTED_PROXIES: {
    good: ['10.0.0.1, 10.0.0.0/8', (c) => c.trustedProxies, ['10.0.0.1', '10.0.0.0/8']],
  },
  HOOKLINE_OPERATOR: {
    good: ['alice@example.com', (c) => c.operator, 'alice@example.com'],
    bad: ['alice smith', /expected an operator name of 1 to 64 letters, digits/],
  },
  HOOKLINE_AUTH_USER_HEADER: {
    good: ['X-Forwarded-User', (c) => c.authUserHeader, 'x-forwarded-user'],
    bad: ['X_User', /expected an HTTP header name of letters, digits and '-'/],
  },
  HOOKLINE_BROKER_URL: {
    good: ['redis://127.0.0.1:6379', (c) => c.broker.url, 'redis://127.0.0.1:6379'],
    bad: ['http://127.0.0.1:6379', /expected a redis:\/\/ or rediss:\/\/ URL/],
  },
  HOOKLINE_BROKER_CHANNELS: {
    good: ['orders, chat', (c) => c.broker.channels, ['orders', 'chat']],
    extra: { HOOKLINE_BROKER_URL: 'redis://127.0.0.1:6379' },
  },
  HOOKLINE_BROKER_CLAIM_IDLE_MS: {
    good: ['60000', (c) => c.broker.claimIdleMs, 60000],
    bad: ['5', /expected a number of milliseconds: an integer from 100 to 86400000/],
  },
  HOOKLINE_SECRET_KEY: {
    good: [secretKey, (c) => c.secretKey, secretKey],
    bad: ['short', /expected a key of 43 or more base64 or base64url characters/],
  },
  HOOKLINE_RECEIVER_RATE_LIMIT: {
    good: ['50', (c) => c.receiverRateLimit.max, 50],
    bad: ['many', /expected a number of requests \(0 turns the limit off\): an integer from 0 to 1000000/],
  },
  HOOKLINE_RECEIVER_RATE_WINDOW_S: {
    good: ['10', (c) => c.receiverRateLimit.windowS, 10],
    bad: ['0', /expected a number of seconds: an integer from 1 to 86400/],
  },
  HOOKLINE_A2A_RATE_LIMIT: {
    good: ['30', (c) => c.a2aRateLimit.max, 30],
    bad: ['-1', /expected a number of requests \(0 turns the limit off\): an integer from 0 to 1000000/],
  },
  HOOKLINE_A2A_RATE_WINDOW_S: {
    good: ['300', (c) => c.a2aRateLimit.windowS, 300],
    bad: ['86401', /expected a number of seconds: an integer from 1 to 86400/],
  },
  HOOKLINE_SHUTDOWN_TIMEOUT_MS: {
    good: ['2500', (c) => c.shutdownTimeoutMs, 2500],
    bad: ['-1', /expected a number of milliseconds: an integer from 0 to 600000/],
  },
};

describe('config: every variable', () => {
  it('has a case here for every variable of the schema', () => {
    const missing = Object.keys(envSchema.shape).filter((name) => !(name in cases));
    expect(missing).toEqual([]);
  });

  // A row may run ahead of the schema while a variable is being added; it runs once it is there.
  const inSchema = new Set(Object.keys(envSchema.shape));
  for (const [name, { good, bad, extra }] of Object.entries(cases).filter(([n]) => inSchema.has(n))) {
    it(`${name} parses a good value`, () => {
      const [raw, read, expected] = good;
      expect(read(load({ ...extra, [name]: raw }))).toEqual(expected);
    });
    if (bad !== undefined) {
      const [value, expected] = bad;
      it(`${name} refuses ${JSON.stringify(value)} naming the variable and what was expected`, () => {
        const issues = issuesOf({ ...extra, [name]: value });
        expect(issues).toHaveLength(1);
        expect(issues[0]).toMatch(new RegExp(`^${name}: `));
        expect(issues[0]).toMatch(expected);
        // Words, not zod's shorthand: no bare "Invalid URL", no raw pattern, no "received NaN".
        expect(issues[0]).not.toMatch(/Invalid URL|pattern|\/\^|NaN|>=|<=/);
      });
    }
  }
});

describe('config: defaults', () => {
  it('gives the embedded default on loopback port 8080 with ./data', () => {
    const c = load({});
    expect(c.mode).toBe('embedded');
    expect(c.host).toBe('127.0.0.1');
    expect(c.port).toBe(8080);
    expect(c.baseUrl).toBe('http://127.0.0.1:8080');
    expect(c.dataDir).toBe(path.resolve('./data'));
    expect(c.logLevel).toBe('info');
    expect(c.maxBodyBytes).toBe(5 * 1024 * 1024);
    expect(c.signatureToleranceS).toBe(300);
    expect(c.shutdownTimeoutMs).toBe(10_000);
    expect(c.operator).toBe('admin');
    expect(c.secrets).toEqual({ codehost: [], payments: [], chat: [] });
    expect(c.broker).toMatchObject({ url: undefined, channels: [] });
    expect(c.version).toBe('9.9.9');
  });

  it('derives the base URL from host and port, bracketing an IPv6 host', () => {
    expect(load({ HOOKLINE_HOST: '::1', HOOKLINE_PORT: '9000' }).baseUrl).toBe('http://[::1]:9000');
  });

  it('is frozen all the way down', () => {
    const c = load({ HOOKLINE_CODEHOST_SECRET: 'a' });
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.secrets.codehost)).toBe(true);
    expect(() => {
      (c as { port: number }).port = 1;
    }).toThrow(TypeError);
  });
});

describe('config: storage mode', () => {
  it('is embedded with neither URL', () => {
    expect(load({}).mode).toBe('embedded');
  });

  it('is server with DATABASE_URL alone', () => {
    expect(load({ DATABASE_URL: 'postgresql://db/hookline' }).mode).toBe('server');
  });

  it('is scale-out with both URLs', () => {
    const c = load({
      DATABASE_URL: 'postgres://db/hookline',
      HOOKLINE_EVENTSTORE_URL: 'kurrentdb://es:2113?tls=false',
    });
    expect(c.mode).toBe('scale-out');
  });

  it('refuses HOOKLINE_EVENTSTORE_URL without DATABASE_URL, naming both', () => {
    const issues = issuesOf({ HOOKLINE_EVENTSTORE_URL: 'esdb://es:2113?tls=false' });
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatch(/^HOOKLINE_EVENTSTORE_URL: /);
    expect(issues[0]).toContain('DATABASE_URL');
  });

  it('refuses HOOKLINE_BROKER_CHANNELS without HOOKLINE_BROKER_URL, naming both', () => {
    const issues = issuesOf({ HOOKLINE_BROKER_CHANNELS: 'orders' });
    expect(issues[0]).toMatch(/^HOOKLINE_BROKER_CHANNELS: .*HOOKLINE_BROKER_URL/);
  });
});

describe('config: error messages', () => {
  it('lists every bad variable at once, each with the value it got', () => {
    const issues = issuesOf({ HOOKLINE_PORT: 'eighty', HOOKLINE_LOG_LEVEL: 'loud' });
    expect(issues).toHaveLength(2);
    expect(issues.find((i) => i.startsWith('HOOKLINE_PORT: '))).toContain('"eighty"');
    expect(issues.find((i) => i.startsWith('HOOKLINE_LOG_LEVEL: '))).toContain('"loud"');
  });

  it('says what was expected', () => {
    const [issue] = issuesOf({ HOOKLINE_LOG_LEVEL: 'loud' });
    expect(issue).toMatch(/info/);
    const [port] = issuesOf({ HOOKLINE_PORT: '70000' });
    expect(port).toMatch(/65535/);
  });

  it('says what kind of URL each URL variable expects, for a value that is no URL at all', () => {
    const expected: Record<string, RegExp> = {
      HOOKLINE_BASE_URL: /^HOOKLINE_BASE_URL: expected an http\(s\) URL such as http:\/\/127\.0\.0\.1:8080/,
      DATABASE_URL: /^DATABASE_URL: expected a postgres:\/\/ or postgresql:\/\/ URL such as postgres:\/\//,
      HOOKLINE_BROKER_URL:
        /^HOOKLINE_BROKER_URL: expected a redis:\/\/ or rediss:\/\/ URL such as redis:\/\//,
      HOOKLINE_EVENTSTORE_URL: /^HOOKLINE_EVENTSTORE_URL: expected .*such as esdb:\/\/127\.0\.0\.1:2113/,
    };
    for (const [name, message] of Object.entries(expected)) {
      const [issue] = issuesOf({ DATABASE_URL: 'postgres://db/hookline', [name]: 'not a url' });
      expect(issue).toMatch(message);
      expect(issue).toContain('(got "not a url")');
    }
  });

  it('says the range of an integer for a fraction and for a value out of range', () => {
    expect(issuesOf({ HOOKLINE_PORT: '80.5' })[0]).toMatch(
      /^HOOKLINE_PORT: expected a TCP port: an integer from 0 to 65535/,
    );
    expect(issuesOf({ HOOKLINE_PORT: '70000' })[0]).toMatch(
      /^HOOKLINE_PORT: expected a TCP port: an integer from 0 to 65535/,
    );
  });

  it('never echoes a secret or a URL password', () => {
    const [key] = issuesOf({ HOOKLINE_SECRET_KEY: 'tooShortSecret' });
    expect(key).not.toContain('tooShortSecret');
    const [db] = issuesOf({ DATABASE_URL: 'mysql://admin:hunter2@db/x' });
    expect(db).toMatch(/^DATABASE_URL: /);
    expect(db).not.toContain('hunter2');
  });

  it('puts every issue in the ConfigError message', () => {
    try {
      load({ HOOKLINE_PORT: '-5' });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain('HOOKLINE_PORT');
    }
  });
});
