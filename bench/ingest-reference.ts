/**
 * What bench/ingest.ts compares hookline with and how it counts the cost of a delivery.
 *
 * - `serveDurable`: a minimal durable webhook route (issue 20): bare Fastify, the same HMAC check
 *   as the bare route, then a group-commit multi-row `INSERT … ON CONFLICT DO NOTHING` of
 *   (delivery id unique, headers jsonb, payload bytea) into a table of its own database, and 202
 *   only once that statement has committed. One connection writes; whatever arrives while a
 *   batch is in flight goes into the next one.
 * - `cpuSeconds`: a process's user + system CPU from /proc/<pid>/stat (all its threads).
 * - `databaseCounters`: a database's pg_stat_database counters and the cluster's WAL position.
 */
import { execFileSync } from 'node:child_process';
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyRequest } from 'fastify';
import Fastify from 'fastify';
import pg from 'pg';

/** The same check the bare route makes: `X-Hub-Signature-256` over the raw body, constant time. */
export function signatureValid(request: FastifyRequest, secret: string): boolean {
  const header = request.headers['x-hub-signature-256'];
  const expected = createHmac('sha256', secret)
    .update(request.body as Buffer)
    .digest();
  const given =
    typeof header === 'string' && header.startsWith('sha256=') ? Buffer.from(header.slice(7), 'hex') : null;
  return given !== null && given.length === expected.length && timingSafeEqual(given, expected);
}

interface Pending {
  id: string;
  headers: string;
  payload: Buffer;
  done: (error?: unknown) => void;
}

export async function serveDurable(databaseUrl: string, secret: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query(`create table if not exists reference_deliveries (
    delivery_id text primary key,
    headers jsonb not null,
    payload bytea not null,
    received_at timestamptz not null default now())`);

  let queue: Pending[] = [];
  let writing = false;
  const write = async () => {
    writing = true;
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      try {
        // One statement outside a transaction block commits on its own: it returns after COMMIT.
        await client.query(
          `insert into reference_deliveries (delivery_id, headers, payload)
           select * from unnest($1::text[], $2::jsonb[], $3::bytea[])
           on conflict (delivery_id) do nothing`,
          [batch.map((p) => p.id), batch.map((p) => p.headers), batch.map((p) => p.payload)],
        );
        for (const p of batch) p.done();
      } catch (error) {
        for (const p of batch) p.done(error);
      }
    }
    writing = false;
  };
  const persist = (id: string, headers: string, payload: Buffer) =>
    new Promise<void>((resolve, reject) => {
      queue.push({ id, headers, payload, done: (error) => (error ? reject(error) : resolve()) });
      if (!writing) void write();
    });

  const app = Fastify({ logger: false });
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  app.post('/webhooks/codehost', async (request, reply) => {
    if (!signatureValid(request, secret)) return reply.code(401).send({ error: 'bad signature' });
    const header = request.headers['x-github-delivery'];
    await persist(
      typeof header === 'string' ? header : randomUUID(),
      JSON.stringify(request.headers),
      request.body as Buffer,
    );
    return reply.code(202).send({ ok: true });
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  process.once('SIGTERM', () => {
    void app
      .close()
      .then(() => client.end())
      .finally(() => process.exit(0));
  });
  return (app.server.address() as { port: number }).port;
}

let ticksPerSecond: number | undefined;
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** User + system CPU seconds a process (all its threads) has used; undefined without /proc. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at field 3; utime, stime are 14, 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clockTicks();
  } catch {
    return undefined;
  }
}

export interface DatabaseCounters {
  tupInserted: number;
  xactCommit: number;
  /** The cluster's WAL position in bytes (the whole cluster: other databases' writes count too). */
  walBytes: bigint;
  /** CPU seconds so far of each backend connected to the database (those /proc shows). */
  backends: Map<number, number>;
}

/** Reads a database's counters through an admin connection to another database. */
export async function databaseCounters(adminUrl: string, database: string): Promise<DatabaseCounters> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query('select pg_stat_clear_snapshot()');
    const stats = await client.query<{ tup_inserted: string; xact_commit: string; wal: string }>(
      `select tup_inserted::text, xact_commit::text, (pg_current_wal_lsn() - '0/0')::text as wal
       from pg_stat_database where datname = $1`,
      [database],
    );
    const pids = await client.query<{ pid: number }>(
      'select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
      [database],
    );
    const backends = new Map<number, number>();
    for (const { pid } of pids.rows) {
      const cpu = cpuSeconds(pid);
      if (cpu !== undefined) backends.set(pid, cpu);
    }
    const row = stats.rows[0];
    return {
      tupInserted: Number(row?.tup_inserted ?? 0),
      xactCommit: Number(row?.xact_commit ?? 0),
      walBytes: BigInt((row?.wal ?? '0').split('.')[0]!),
      backends,
    };
  } finally {
    await client.end();
  }
}

/** CPU seconds processes used between two snapshots of pid -> CPU (new ones count from 0). */
export function backendCpu(before: Map<number, number>, after: Map<number, number>): number | undefined {
  if (after.size === 0) return undefined;
  let total = 0;
  for (const [pid, cpu] of after) total += cpu - (before.get(pid) ?? 0);
  return total;
}

/** Waits until no backend is connected to the database any more (their statistics are flushed on exit). */
export async function backendsGone(adminUrl: string, database: string, timeoutMs = 10_000): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      const r = await client.query<{ n: number }>(
        'select count(*)::int as n from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
        [database],
      );
      if (r.rows[0]!.n === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await client.end();
  }
}

/** Waits until the database inserts nothing for `quietMs` (projections caught up), at most `timeoutMs`. */
export async function settled(adminUrl: string, database: string, quietMs = 1_500, timeoutMs = 15_000) {
  const started = Date.now();
  let last = -1;
  let since = Date.now();
  while (Date.now() - started < timeoutMs) {
    const { tupInserted } = await databaseCounters(adminUrl, database);
    if (tupInserted !== last) {
      last = tupInserted;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
