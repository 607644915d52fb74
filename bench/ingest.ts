/**
 * Signed-ingestion benchmark (design.md, "Targets"): a signed 1.5 KB codehost payload, 32
 * connections, against hookline on PostgreSQL, hookline embedded (its own PostgreSQL) and a bare Fastify route
 * that checks the same HMAC and persists nothing, in one run. Each server runs in its own child
 * process; autocannon drives it from this one. Prints req/s, p50, p99 and the ratios to the bare
 * route. `npm run bench:ingest [-- --duration 10 --connections 32 --only bare,postgres,embedded]`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { NODE_FLAGS } from '../src/cli/node-flags.ts';
import { memoryOf, peakRssMb, postmasterOf, processTree, sampleTreePeak } from './memory.ts';
import { scratchDataDir } from './scratch-data-dir.ts';
import { createScratchDatabase } from './scratch-database.ts';

const SECRET = 'bench-codehost-secret';
const SELF = fileURLToPath(import.meta.url);

type Target = 'bare' | 'postgres' | 'embedded';

/** A push-like codehost payload padded to exactly 1,536 bytes. */
function payload(): string {
  const base = {
    ref: 'refs/heads/main',
    before: '6113728f27ae82c7b1a177c8d03f9e96e0adf246',
    after: '0000000000000000000000000000000000000000',
    repository: {
      id: 35129377,
      name: 'public-repo',
      full_name: 'baxterthehacker/public-repo',
      private: false,
    },
    pusher: { name: 'baxterthehacker', email: 'baxterthehacker@users.noreply.github.com' },
    commits: [
      {
        id: '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c',
        message: 'Update README.md',
        author: { name: 'baxter' },
      },
    ],
    padding: '',
  };
  const without = JSON.stringify(base).length;
  base.padding = 'x'.repeat(1536 - without);
  return JSON.stringify(base);
}

// ---- child: one server -------------------------------------------------------------------

async function serveBare(): Promise<number> {
  const app = Fastify({ logger: false });
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  app.post('/webhooks/codehost', async (request, reply) => {
    const header = request.headers['x-hub-signature-256'];
    const expected = createHmac('sha256', SECRET)
      .update(request.body as Buffer)
      .digest();
    const given =
      typeof header === 'string' && header.startsWith('sha256=') ? Buffer.from(header.slice(7), 'hex') : null;
    if (!given || given.length !== expected.length || !timingSafeEqual(given, expected)) {
      return reply.code(401).send({ error: 'bad signature' });
    }
    return reply.code(202).send({ ok: true });
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return (app.server.address() as { port: number }).port;
}

async function serveHookline(): Promise<number> {
  const { loadConfig } = await import('../src/config.ts');
  const { createRuntime } = await import('../src/runtime.ts');
  const { buildApp } = await import('../src/app.ts');
  const config = loadConfig({
    ...process.env,
    HOOKLINE_CODEHOST_SECRET: SECRET,
    HOOKLINE_LOG_LEVEL: 'warn',
    HOOKLINE_HOST: '127.0.0.1',
    HOOKLINE_PORT: '0',
  });
  const { changeSettings } = await import('../src/settings/change.ts');
  const runtime = await createRuntime(config);
  // Retention off (0 = unlimited for both limits), as the targets are defined.
  await changeSettings(runtime, {
    type: 'ChangeSettings',
    values: { retention_max_rows: 0, retention_max_age_days: 0 },
    actor: 'bench',
  });
  const app = await buildApp(runtime, { requestLogging: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  process.once('SIGTERM', () => {
    void app
      .close()
      .then(() => runtime.close())
      .finally(() => process.exit(0));
  });
  return (app.server.address() as { port: number }).port;
}

// ---- parent: drive each target -----------------------------------------------------------

/** Peak of hookline's RSS plus its PostgreSQL's PSS, sampled at the same moments. */
function sampleTotal(hooklinePid: number, dataDir: string) {
  let peak = 0;
  const sample = () => {
    const pm = postmasterOf(dataDir);
    const pg = pm ? memoryOf(processTree(pm)).pssMb : 0;
    peak = Math.max(peak, memoryOf([hooklinePid]).rssMb + pg);
  };
  sample();
  const timer = setInterval(sample, 200);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

function startChild(
  target: Target,
  env: Record<string, string>,
): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    // Every server, the bare one too, runs with the flags `hookline serve` runs with.
    const child = spawn(process.execPath, [...NODE_FLAGS, SELF, '--serve', target], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /READY (\d+)/.exec(out);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.once('exit', (code) => reject(new Error(`${target} server exited (${code}) before it was ready`)));
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

interface Figures {
  target: Target;
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  non2xx: number;
  errors: number;
  /** The server's peak resident set (VmHWM), MB; undefined where /proc is not there. */
  peakRssMb?: number;
  /** Embedded: peaks of the sums over the managed PostgreSQL's processes (RSS and PSS), MB. */
  postgres?: { rssMb: number; pssMb: number };
  /** Embedded: peak of hookline's RSS plus its PostgreSQL's PSS, sampled together, MB. */
  totalMb?: number;
}

async function drive(
  target: Target,
  port: number,
  seconds: number,
  connections: number,
  body: string,
  deliveryIds: boolean,
) {
  const signature = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
  const options: autocannon.Options = {
    url: `http://127.0.0.1:${port}/webhooks/codehost`,
    connections,
    duration: seconds,
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      'x-hub-signature-256': signature,
      'x-github-event': 'push',
    },
    // A real sender names each delivery: every request carries a fresh id, so the dedup
    // reservation runs as in production (`--no-delivery-id` leaves it out, for comparison).
    requests: !deliveryIds
      ? [{}]
      : [
          {
            setupRequest: (req) => ({
              ...req,
              headers: { ...req.headers, 'x-github-delivery': randomUUID() },
            }),
          },
        ],
  };
  const r = await autocannon(options);
  return {
    target,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    ok: r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  } satisfies Figures;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      serve: { type: 'string' },
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '3' },
      connections: { type: 'string', default: '32' },
      only: { type: 'string', default: 'bare,postgres,embedded' },
      'no-delivery-id': { type: 'boolean', default: false },
    },
  });
  if (values.serve) {
    const port = values.serve === 'bare' ? await serveBare() : await serveHookline();
    process.stdout.write(`READY ${port}\n`);
    return;
  }
  const seconds = Number(values.duration);
  const warmup = Number(values.warmup);
  const connections = Number(values.connections);
  const targets = values.only.split(',').map((t) => t.trim()) as Target[];
  const body = payload();
  const deliveryIds = !values['no-delivery-id'];
  console.log(
    `signed codehost payload of ${Buffer.byteLength(body)} bytes, ${connections} connections, ${seconds} s per target (+${warmup} s warm-up), retention off`,
  );

  const load = () =>
    os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  console.log(`load average at start: ${load()} (${os.cpus().length} CPUs)`);
  const results: Figures[] = [];
  for (const target of targets) {
    const env: Record<string, string> = {};
    let cleanup = async () => {};
    if (target === 'postgres') {
      const database = await createScratchDatabase('ingest');
      env.DATABASE_URL = database.url;
      cleanup = database.drop;
    } else if (target === 'embedded') {
      const dataDir = await scratchDataDir('ingest');
      env.HOOKLINE_DATA_DIR = dataDir.dir;
      cleanup = dataDir.remove;
    }
    try {
      const { child, port } = await startChild(target, env);
      try {
        if (warmup > 0) await drive(target, port, warmup, connections, body, deliveryIds);
        const dir = env.HOOKLINE_DATA_DIR;
        const pgPeak = dir ? sampleTreePeak(() => postmasterOf(dir)) : undefined;
        const totalPeak = dir && child.pid ? sampleTotal(child.pid, dir) : undefined;
        const figures = await drive(target, port, seconds, connections, body, deliveryIds);
        const postgres = pgPeak?.stop();
        const totalMb = totalPeak?.stop();
        results.push({
          ...figures,
          peakRssMb: child.pid === undefined ? undefined : peakRssMb(child.pid),
          ...(postgres ? { postgres } : {}),
          ...(totalMb !== undefined ? { totalMb } : {}),
        });
        console.log(`  ${target}: done`);
      } finally {
        await stopChild(child);
      }
    } finally {
      await cleanup();
    }
  }

  const bare = results.find((r) => r.target === 'bare');
  const server = results.find((r) => r.target === 'postgres');
  console.log(
    '\ntarget     req/s     p50 ms  p99 ms  ratio   2xx       non-2xx  errors  peak RSS MB  PostgreSQL peak RSS/PSS MB  hookline+PG peak MB',
  );
  for (const r of results) {
    const ratio = bare ? `${((r.rps / bare.rps) * 100).toFixed(1)}%` : 'n/a';
    const pgMem = r.postgres ? `${r.postgres.rssMb.toFixed(0)} / ${r.postgres.pssMb.toFixed(0)}` : 'n/a';
    console.log(
      `${r.target.padEnd(10)} ${r.rps.toFixed(0).padStart(8)}  ${String(r.p50).padStart(6)}  ${String(r.p99).padStart(6)}  ${ratio.padStart(6)}  ${String(r.ok).padStart(8)}  ${String(r.non2xx).padStart(7)}  ${String(r.errors).padStart(6)}  ${r.peakRssMb === undefined ? 'n/a' : r.peakRssMb.toFixed(0).padStart(11)}  ${pgMem.padStart(26)}  ${r.totalMb === undefined ? 'n/a' : r.totalMb.toFixed(0).padStart(19)}`,
    );
  }
  const embedded = results.find((r) => r.target === 'embedded');
  if (embedded && server) {
    console.log(
      `\nembedded / server mode, same run: ${((embedded.rps / server.rps) * 100).toFixed(1)}% of the rate`,
    );
  }
  console.log(`\nload average at end: ${load()}`);
  console.log(
    'targets: postgres >= 50% of bare with p99 < 25 ms; embedded >= 90% of server mode; embedded peak: hookline < 250 MB, hookline + its PostgreSQL < 400 MB',
  );
  console.log(
    'PostgreSQL RSS counts shared buffers once per process that touched them; PSS divides shared pages among their sharers (what the processes really hold); hookline+PG = hookline RSS + PostgreSQL PSS, sampled together',
  );
}

await main();
