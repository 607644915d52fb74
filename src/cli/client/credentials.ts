import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CliExit } from '../support.ts';

/** What the CLI keeps per server after `hookline login`: the rotating token pair and where to refresh it. */
export interface StoredCredentials {
  readonly issuer: string;
  readonly token_endpoint: string;
  readonly revocation_endpoint: string | null;
  readonly client_id: string;
  readonly access_token: string;
  readonly refresh_token: string | null;
  /** Epoch milliseconds. */
  readonly expires_at: number;
  readonly operator: string | null;
  readonly saved_at: string;
}

interface CredentialsFile {
  readonly version: 1;
  readonly servers: Record<string, StoredCredentials>;
}

/** `${XDG_CONFIG_HOME:-~/.config}/hookline`. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base =
    env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME)
      ? env.XDG_CONFIG_HOME
      : path.join(homedir(), '.config');
  return path.join(base, 'hookline');
}

export const credentialsPath = (env: NodeJS.ProcessEnv = process.env): string =>
  path.join(configDir(env), 'credentials.json');

/** A credentials file that cannot be used: one sentence with the way out, never a stack. */
function unusable(file: string, why: string): CliExit {
  return new CliExit(
    `hookline: the credentials file ${file} ${why}. Delete it (rm ${JSON.stringify(file)}) and run \`hookline login\` again; only the stored sign-ins are lost.`,
  );
}

async function readAll(file: string): Promise<CredentialsFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { version: 1, servers: {} };
    if (code === 'EACCES') {
      throw new CliExit(
        `hookline: cannot read the credentials file ${file}: permission denied; run as the user who signed in, or fix its owner (it must be readable by you only, mode 0600).`,
      );
    }
    throw unusable(file, `cannot be read (${(err as Error).message})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw unusable(file, `is not valid JSON (${(err as Error).message})`);
  }
  const candidate = parsed as Partial<CredentialsFile> | null;
  const servers = candidate?.servers;
  const wellFormed =
    candidate?.version === 1 &&
    typeof servers === 'object' &&
    servers !== null &&
    !Array.isArray(servers) &&
    Object.values(servers).every(
      (c) => typeof c === 'object' && c !== null && typeof (c as StoredCredentials).access_token === 'string',
    );
  if (!wellFormed) throw unusable(file, 'is not a hookline credentials file (version 1 with its servers)');
  return candidate as CredentialsFile;
}

/** Written to a temporary file (mode 0600 from its creation) and renamed over: never half a file. */
async function writeAll(file: string, content: CredentialsFile): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  const handle = await open(tmp, 'w', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(content, null, 2)}\n`);
    await handle.chmod(0o600);
  } finally {
    await handle.close();
  }
  await rename(tmp, file);
}

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/**
 * The key of a server's sign-in: its URL, with any loopback name (localhost, 127.x.x.x, [::1])
 * written 127.0.0.1, so `--url http://localhost:8080` and `http://127.0.0.1:8080` share one.
 */
export function credentialKey(server: string): string {
  try {
    const u = new URL(server);
    if (LOOPBACK.test(u.hostname)) u.hostname = '127.0.0.1';
    return u.toString().replace(/\/+$/, '');
  } catch {
    return server;
  }
}

/** The stored entry of `server`, under its key or (files written before keys) any alias of it. */
function entryOf(all: CredentialsFile, server: string): [string, StoredCredentials] | undefined {
  const key = credentialKey(server);
  if (all.servers[key]) return [key, all.servers[key]];
  return Object.entries(all.servers).find(([k]) => credentialKey(k) === key);
}

/**
 * The credentials store. A refresh rotates the pair and the old refresh token must never be used
 * again (the server revokes the whole sign-in on reuse), so two CLI processes refreshing at once
 * would sign each other out: `withLock` serializes them across processes.
 */
export function createCredentialStore(env: NodeJS.ProcessEnv = process.env) {
  const file = credentialsPath(env);
  const lockFile = `${file}.lock`;

  return {
    file,
    async get(server: string): Promise<StoredCredentials | undefined> {
      return entryOf(await readAll(file), server)?.[1];
    },
    async put(server: string, credentials: StoredCredentials): Promise<void> {
      const all = await readAll(file);
      const key = credentialKey(server);
      const rest = Object.fromEntries(Object.entries(all.servers).filter(([k]) => credentialKey(k) !== key));
      await writeAll(file, { version: 1, servers: { ...rest, [key]: credentials } });
    },
    async remove(server: string): Promise<boolean> {
      const all = await readAll(file);
      const key = credentialKey(server);
      const rest = Object.fromEntries(Object.entries(all.servers).filter(([k]) => credentialKey(k) !== key));
      if (Object.keys(rest).length === Object.keys(all.servers).length) return false;
      if (Object.keys(rest).length === 0) await rm(file, { force: true });
      else await writeAll(file, { version: 1, servers: rest });
      return true;
    },
    async withLock<T>(fn: () => Promise<T>): Promise<T> {
      await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      for (let attempt = 0; ; attempt++) {
        try {
          const handle = await open(lockFile, 'wx', 0o600);
          await handle.writeFile(String(process.pid));
          await handle.close();
          break;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
          // A lock older than 30 s belongs to a process that died mid-refresh.
          const age = await stat(lockFile).then(
            (s) => Date.now() - s.mtimeMs,
            () => 0,
          );
          if (age > 30_000) await rm(lockFile, { force: true });
          else if (attempt > 300) throw new Error(`${lockFile} is held by another hookline process`);
          else await sleep(50);
        }
      }
      try {
        return await fn();
      } finally {
        await rm(lockFile, { force: true });
      }
    },
  };
}

export type CredentialStore = ReturnType<typeof createCredentialStore>;
