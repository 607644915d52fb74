import net from 'node:net';
import type { Config } from '../config.ts';
import { CliExit } from './support.ts';

/**
 * Start-up and configuration failures said as one sentence each, with what to change, instead of
 * a stack (docs/reference/configuration.md, start-up errors).
 */

type Cause = Error & { code?: string; syscall?: string; address?: string; port?: number };

/** `err` and its causes (a migration failure wraps the driver's error), outermost first. */
function chain(err: unknown): Cause[] {
  const out: Cause[] = [];
  let e: unknown = err;
  while (e instanceof Error && out.length < 8) {
    out.push(e as Cause);
    e = (e as { cause?: unknown }).cause;
  }
  return out;
}

/** The URL as it may be shown: the password replaced. */
export function hidePassword(url: string): string {
  try {
    const u = new URL(url);
    if (!u.password) return u.toString();
    u.password = 'x';
    return u.toString().replace(/:x@/, ':«hidden»@');
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:«hidden»@');
  }
}

function listenProblem(code: string | undefined, host: string, port: number): string | undefined {
  switch (code) {
    case 'EADDRINUSE':
      return `port ${port} on ${host} is already in use (another hookline, or another program). Stop that program, or set HOOKLINE_PORT to a free port (for example HOOKLINE_PORT=${port === 65535 ? 8081 : port + 1}).`;
    case 'EACCES':
      return `this user may not listen on port ${port} of ${host} (ports below 1024 need privileges). Set HOOKLINE_PORT to a port from 1024 up, such as 8080.`;
    case 'EADDRNOTAVAIL':
      return `no network interface of this machine has the address ${host}. Set HOOKLINE_HOST to one that does: 127.0.0.1 (this machine only) or 0.0.0.0 (every interface, behind a reverse proxy).`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `the host name ${host} of HOOKLINE_HOST does not resolve. Set HOOKLINE_HOST to an address such as 127.0.0.1 or 0.0.0.0.`;
    default:
      return undefined;
  }
}

/**
 * Checks that the service can listen on HOOKLINE_HOST:HOOKLINE_PORT before anything is opened or
 * created (a data directory, a database, migrations): a port in use is said at once, not after the
 * whole start. Port 0 (any free port) always passes.
 */
export async function assertPortFree(config: Pick<Config, 'host' | 'port'>): Promise<void> {
  if (config.port === 0) return;
  const problem = await new Promise<string | undefined>((resolve) => {
    const probe = net.createServer();
    probe.once('error', (err: Cause) =>
      resolve(listenProblem(err.code, config.host, config.port) ?? err.message),
    );
    probe.listen({ host: config.host, port: config.port, exclusive: true }, () => {
      probe.close(() => resolve(undefined));
    });
  });
  if (problem) throw new CliExit(`hookline: cannot start: ${problem}`);
}

function databaseProblem(e: Cause, url: string): string | undefined {
  const shown = hidePassword(url);
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  const user = decodeURIComponent(u.username) || 'the current user';
  const database = decodeURIComponent(u.pathname.replace(/^\//, '')) || user;
  const where = `${u.hostname}:${u.port || '5432'}`;
  switch (e.code) {
    case '3D000':
      return `the PostgreSQL database "${database}" does not exist (DATABASE_URL=${shown}). Create it (createdb -h ${u.hostname} -p ${u.port || '5432'}${u.username ? ` -U ${user}` : ''} ${database}), or set DATABASE_URL to a database that exists.`;
    case '28P01':
      return `PostgreSQL refused the password of user "${user}" (DATABASE_URL=${shown}). Fix the password in DATABASE_URL (percent-encode characters such as @, : and /).`;
    case '28000':
      return `PostgreSQL refused user "${user}": ${e.message} (DATABASE_URL=${shown}). Fix the user in DATABASE_URL, or allow it in the server's pg_hba.conf.`;
    case 'ECONNREFUSED':
      return `nothing accepts PostgreSQL connections at ${where} (DATABASE_URL=${shown}). Start PostgreSQL there, or fix the host and port in DATABASE_URL.`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `the PostgreSQL host "${u.hostname}" does not resolve (DATABASE_URL=${shown}). Fix the host in DATABASE_URL.`;
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `PostgreSQL at ${where} cannot be reached (${e.code}; DATABASE_URL=${shown}). Check that the server runs and that this machine may reach it.`;
    default:
      if (/connection timeout|timeout expired/i.test(e.message)) {
        return `PostgreSQL at ${where} did not answer in time (DATABASE_URL=${shown}). Check that the server runs and is not overloaded.`;
      }
      return undefined;
  }
}

/**
 * The one-line sentence for a failure to start (to listen, or to reach PostgreSQL), or undefined
 * when `err` is none of those: the caller then shows it as it is.
 */
export function describeStartupError(
  err: unknown,
  config: Pick<Config, 'host' | 'port' | 'databaseUrl'> | undefined,
): string | undefined {
  for (const e of chain(err)) {
    // Embedded mode's own PostgreSQL (db/managed-postgres.ts) says its failures as sentences.
    if (e.name === 'ManagedPostgresError')
      return `hookline: cannot start the embedded PostgreSQL: ${e.message}`;
    if (e.syscall === 'listen' && config) {
      const problem = listenProblem(e.code, config.host, config.port);
      if (problem) return `hookline: cannot start: ${problem}`;
    }
    if (config?.databaseUrl) {
      const problem = databaseProblem(e, config.databaseUrl);
      if (problem) return `hookline: cannot open the database: ${problem}`;
    }
  }
  return undefined;
}
