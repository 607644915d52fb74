import { existsSync } from 'node:fs';
import { appendFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../server/harness.ts';
import { freshDataDir, removeDataDir } from '../support/embedded.ts';
import { PG_ADMIN_URL, postgresAvailable } from '../support/services.ts';
import { hookline, type Run } from './cli.ts';

/**
 * Start-up and configuration errors of the real binary (issue 15, point 4): one sentence on
 * stderr that says what to change, no stack, and nothing created on the way.
 */
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'hookline-startup-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const env = (extra: Record<string, string>) => ({
  HOME: dir,
  XDG_CONFIG_HOME: path.join(dir, 'config'),
  HOOKLINE_LOG_LEVEL: 'warn',
  ...extra,
});

/** One line of stderr, no stack frame in it. */
function sentence(run: Run): string {
  const lines = run.stderr.trim().split('\n');
  expect(lines, run.stderr).toHaveLength(1);
  expect(run.stderr).not.toMatch(/^\s+at /m);
  return lines[0]!;
}

/** A server that speaks just enough of PostgreSQL's protocol to refuse a password (a misuse fake). */
async function passwordRefusingPostgres(): Promise<{ port: number; close(): Promise<void> }> {
  const server = net.createServer((socket) => {
    let startup = true;
    socket.on('data', () => {
      if (startup) {
        startup = false;
        const ask = Buffer.alloc(9);
        ask.write('R', 0);
        ask.writeInt32BE(8, 1);
        ask.writeInt32BE(3, 5); // AuthenticationCleartextPassword
        socket.write(ask);
        return;
      }
      const fields = ['SFATAL', 'VFATAL', 'C28P01', 'Mpassword authentication failed for user "hookline"'];
      const body = Buffer.concat([...fields.map((f) => Buffer.from(`${f}\0`)), Buffer.from('\0')]);
      const head = Buffer.alloc(5);
      head.write('E', 0);
      head.writeInt32BE(body.length + 4, 1);
      socket.end(Buffer.concat([head, body]));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const hasPg = await postgresAvailable();

describe('hookline serve says why it cannot start', () => {
  it('a port in use: at once, naming HOOKLINE_PORT, before the data directory is created', async () => {
    const port = await freePort();
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
    try {
      const dataDir = path.join(dir, 'never-created');
      const run = await hookline(['serve'], env({ HOOKLINE_PORT: String(port), HOOKLINE_DATA_DIR: dataDir }));
      expect(run.code).toBe(1);
      expect(sentence(run)).toBe(
        `hookline: cannot start: port ${port} on 127.0.0.1 is already in use (another hookline, or another program). Stop that program, or set HOOKLINE_PORT to a free port (for example HOOKLINE_PORT=${port + 1}).`,
      );
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it.runIf(hasPg)(
    'a PostgreSQL database that does not exist: its name, the URL without the password, createdb',
    async () => {
      const url = new URL(PG_ADMIN_URL);
      url.password = 's3cret-pw';
      url.pathname = '/hookline_no_such_db_i15';
      const run = await hookline(
        ['serve'],
        env({ DATABASE_URL: url.toString(), HOOKLINE_PORT: String(await freePort()) }),
      );
      expect(run.code).toBe(1);
      const line = sentence(run);
      expect(line).toMatch(
        /^hookline: cannot open the database: the PostgreSQL database "hookline_no_such_db_i15" does not exist \(DATABASE_URL=postgres:\/\/[^:]+:«hidden»@[^)]+\/hookline_no_such_db_i15\)\. Create it \(createdb -h \S+ -p \d+ -U \S+ hookline_no_such_db_i15\), or set DATABASE_URL to a database that exists\.$/,
      );
      expect(line).not.toContain('s3cret-pw');
    },
  );

  it('embedded mode, a PostgreSQL that does not start (a corrupt postgresql.conf): what PostgreSQL said and where its log is', async () => {
    const dataDir = await freshDataDir();
    try {
      const conf = path.join(dataDir, 'pg', 'postgresql.conf');
      await appendFile(conf, '\nthis line is not a setting\n');
      const run = await hookline(
        ['serve'],
        env({ HOOKLINE_DATA_DIR: dataDir, HOOKLINE_PORT: String(await freePort()) }),
      );
      expect(run.code).toBe(1);
      expect(sentence(run)).toMatch(
        new RegExp(
          `^hookline: cannot start the embedded PostgreSQL: PostgreSQL did not start on ${dataDir}/pg: configuration file "${conf}" contains errors; syntax error in file "${conf}" line \\d+, near token "is" \\(PostgreSQL's log: ${dataDir}/postgres\\.log\\)$`,
        ),
      );
    } finally {
      await removeDataDir(dataDir);
    }
  });

  it('a PostgreSQL server that refuses connections: host and port, and what to do', async () => {
    const port = await freePort(); // nothing listens there
    const run = await hookline(
      ['serve'],
      env({
        DATABASE_URL: `postgres://hookline:pw@127.0.0.1:${port}/hookline`,
        HOOKLINE_PORT: String(await freePort()),
      }),
    );
    expect(run.code).toBe(1);
    expect(sentence(run)).toBe(
      `hookline: cannot open the database: nothing accepts PostgreSQL connections at 127.0.0.1:${port} (DATABASE_URL=postgres://hookline:«hidden»@127.0.0.1:${port}/hookline). Start PostgreSQL there, or fix the host and port in DATABASE_URL.`,
    );
  });

  it('a wrong PostgreSQL password: the user, the URL without the password', async () => {
    const pg = await passwordRefusingPostgres();
    try {
      const run = await hookline(
        ['serve'],
        env({
          DATABASE_URL: `postgres://hookline:wrong-pw@127.0.0.1:${pg.port}/hookline`,
          HOOKLINE_PORT: String(await freePort()),
        }),
      );
      expect(run.code).toBe(1);
      expect(sentence(run)).toBe(
        `hookline: cannot open the database: PostgreSQL refused the password of user "hookline" (DATABASE_URL=postgres://hookline:«hidden»@127.0.0.1:${pg.port}/hookline). Fix the password in DATABASE_URL (percent-encode characters such as @, : and /).`,
      );
    } finally {
      await pg.close();
    }
  });
});

describe('configuration the CLI cannot use', () => {
  it('warns of an unknown HOOKLINE_* variable, naming the closest known one', async () => {
    const run = await hookline(
      ['whoami', '--url', 'http://127.0.0.1:9'],
      env({ HOOKLINE_PROT: '9090', HOOKLINE_SOMETHING_ELSE: '1' }),
    );
    expect(run.stderr).toContain(
      'hookline: warning: HOOKLINE_PROT is not a variable hookline reads, and is ignored; did you mean HOOKLINE_PORT?',
    );
    expect(run.stderr).toContain(
      'hookline: warning: HOOKLINE_SOMETHING_ELSE is not a variable hookline reads, and is ignored (docs/reference/configuration.md lists them)',
    );
    // A warning, not a failure: the command went on (to find no server there).
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('cannot reach the server at http://127.0.0.1:9');
    // Variables of releases before 0.3.0 are ignored silently (spec 9).
    const legacy = await hookline(
      ['whoami', '--url', 'http://127.0.0.1:9'],
      env({ HOOKLINE_LEGACY_RECEIVER_ENDPOINT_ID: 'x' }),
    );
    expect(legacy.stderr).not.toContain('warning');
  });

  it('a bad configuration variable on a client command: exit 2, invalid_configuration, said once', async () => {
    const plain = await hookline(['whoami'], env({ HOOKLINE_PORT: 'abc' }));
    expect(plain.code).toBe(2);
    expect(plain.stderr).toBe(
      'hookline: invalid configuration:\n  - HOOKLINE_PORT: expected a TCP port: an integer from 0 to 65535 (got "abc")\n',
    );
    const json = await hookline(['whoami', '--json'], env({ HOOKLINE_PORT: 'abc' }));
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stderr)).toEqual({
      error: {
        code: 'invalid_configuration',
        message:
          'invalid configuration:\n  - HOOKLINE_PORT: expected a TCP port: an integer from 0 to 65535 (got "abc")',
        exit_code: 2,
      },
    });
    // The server's address as a variable is configuration too.
    const variable = await hookline(['whoami', '--json'], env({ HOOKLINE_URL: 'ftp://x' }));
    expect(variable.code).toBe(2);
    expect(JSON.parse(variable.stderr)).toEqual({
      error: {
        code: 'invalid_configuration',
        message:
          'HOOKLINE_URL must be an http:// or https:// address (for example http://127.0.0.1:8080), got "ftp://x"',
        exit_code: 2,
      },
    });
  });

  it('--url that is not an http(s) address: a usage error, not a failure', async () => {
    const plain = await hookline(['whoami', '--url', 'ftp://x'], env({}));
    expect(plain.code).toBe(1);
    expect(sentence(plain)).toBe(
      'hookline: --url must be an http:// or https:// address (for example http://127.0.0.1:8080), got "ftp://x"',
    );
    const json = await hookline(['whoami', '--url', 'ftp://x', '--json'], env({}));
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr)).toEqual({
      error: {
        code: 'usage',
        message:
          '--url must be an http:// or https:// address (for example http://127.0.0.1:8080), got "ftp://x"',
        exit_code: 1,
      },
    });
  });

  it('a corrupt credentials file: what is wrong and the way out, not a stack', async () => {
    const file = path.join(dir, 'config', 'hookline', 'credentials.json');
    await mkdir(path.dirname(file), { recursive: true });
    for (const [content, why] of [
      ['{"version": 1, "servers": {', 'is not valid JSON'],
      ['[1, 2, 3]', 'is not a hookline credentials file'],
    ] as const) {
      await writeFile(file, content, { mode: 0o600 });
      const run = await hookline(['whoami', '--url', 'http://127.0.0.1:9'], env({}));
      expect(run.code).toBe(1);
      const line = sentence(run);
      expect(line).toContain(`hookline: the credentials file ${file} ${why}`);
      expect(line).toContain(`Delete it (rm "${file}") and run \`hookline login\` again`);
    }
  });
});
