/**
 * Agent-path benchmark (issue 23): the way from a provider's POST to an agent's todo, beside the
 * instance receiver's rate in the same run. Per mode (PostgreSQL, embedded), a hookline server in
 * a child process; from this process:
 *
 * 1. the instance receiver: `--senders` connections post a signed codehost payload to
 *    `POST /webhooks/codehost` (autocannon), the rate the agent path is compared with;
 * 2. the agent path, without rules and then with 5 rules (four that continue, one that routes):
 *    the same number of senders post to an endpoint's webhook (`POST /webhooks/w/<token>`, a fresh
 *    `webhook-id` each, as Standard Webhooks senders do), while `--agents` MCP SDK clients drain
 *    the queue with claim_next/complete, and a probe times the doorbell: one POST at a time to a
 *    second endpoint's webhook, timed until its subscribed MCP client hears
 *    `notifications/resources/updated` (a probe of its own, so the load's rings do not answer it).
 *
 * Prints deliveries/s, the POST's p50/p99, the doorbell's p50/p99, todos claimed per second, the
 * instance receiver's rate and the ratio, and checks that every todo was claimed exactly once.
 * `npm run bench:agent` (`-- --help` for the options).
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import { NODE_FLAGS } from '../src/cli/node-flags.ts';
import { benchArgs, PG_URL_HELP } from './args.ts';
import { backendCpu, cpuSeconds, databaseCounters } from './ingest-reference.ts';
import { connectAgent } from './mcp-agent.ts';
import { peakRssMb } from './memory.ts';
import { prose } from './payload.ts';
import { scratchDataDir } from './scratch-data-dir.ts';
import { BENCH_ADMIN_URL, createScratchDatabase } from './scratch-database.ts';
import { formatWriterStats, scrapeMetrics, writerStats } from './writer-stats.ts';

/**
 * CPU seconds of the server's rule sandbox processes (rules-sandbox/child.ts, forked on the first
 * evaluation): the rules' own cost, which the server process's figure leaves out.
 */
function sandboxCpuSeconds(serverPid: number): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== serverPid) continue;
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('rules-sandbox')) continue;
      total += cpuSeconds(Number(entry)) ?? 0;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/**
 * The server's main thread (its event loop) as the scheduler saw it: nanoseconds on a core, and
 * runnable but waiting for one (/proc/<pid>/task/<pid>/schedstat). The wait is the share of a
 * loop delay that is the machine's, not the server's own work.
 */
function mainThreadSched(
  pid: number | undefined,
): { readonly runNs: number; readonly waitNs: number } | undefined {
  if (pid === undefined) return undefined;
  try {
    const [run, wait] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ').map(Number);
    return Number.isFinite(run) && Number.isFinite(wait) ? { runNs: run!, waitNs: wait! } : undefined;
  } catch {
    return undefined; // not Linux, or the kernel keeps no scheduler statistics
  }
}

const SECRET = 'bench-codehost-secret';
const SELF = fileURLToPath(import.meta.url);
const QUEUE_URI = 'hookline://queues/inbox';

type Mode = 'postgres' | 'embedded';

interface Vended {
  readonly slug: string;
  readonly token: string;
  readonly webhookId: string;
  readonly ingestToken: string;
}

interface Ready {
  readonly port: number;
  readonly load: Vended;
  readonly probe: Vended;
}

/** A delivery like a small provider event, about 600 bytes. */
const BODY = JSON.stringify({
  type: 'deploy.finished',
  data: {
    service: 'api',
    environment: 'production',
    sha: randomBytes(20).toString('hex'),
    notes: prose(400),
  },
});

const percentile = (xs: readonly number[], p: number) =>
  xs.length === 0
    ? Number.NaN
    : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

// ---- child: the server -------------------------------------------------------------------

async function serve(): Promise<Ready> {
  const { loadConfig } = await import('../src/config.ts');
  const { createRuntime } = await import('../src/runtime.ts');
  const { buildApp } = await import('../src/app.ts');
  const { changeSettings } = await import('../src/settings/change.ts');
  const { vendEndpoint } = await import('../src/endpoints/vend.ts');
  const { ALL_VERBS } = await import('../src/domain/endpoint/verbs.ts');
  const config = loadConfig({
    ...process.env,
    HOOKLINE_CODEHOST_SECRET: SECRET,
    HOOKLINE_LOG_LEVEL: 'warn',
    HOOKLINE_HOST: '127.0.0.1',
    HOOKLINE_PORT: '0',
    HOOKLINE_SECRET_KEY: randomBytes(32).toString('base64url'),
  });
  const runtime = await createRuntime(config);
  await changeSettings(runtime, {
    type: 'ChangeSettings',
    values: { retention_max_rows: 0, retention_max_age_days: 0 },
    actor: 'bench',
  });
  const app = await buildApp(runtime, { requestLogging: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const vend = async (name: string): Promise<Vended> => {
    const v = await vendEndpoint(
      { store: runtime.store, clock: runtime.clock, checkReplayTarget: async () => {} },
      {
        operator: 'bench',
        human: 'bench',
        name,
        queues: ['inbox'],
        verbs: [...ALL_VERBS],
        expiresAt: null,
        replayTargets: [],
      },
    );
    return { slug: v.slug, token: v.token, webhookId: v.webhookId, ingestToken: v.ingestToken };
  };
  const ready = {
    port: (app.server.address() as { port: number }).port,
    load: await vend('load'),
    probe: await vend('probe'),
  };
  // The webhook's token is found through its read model: wait until it is there.
  await runtime.projections.waitFor(await runtime.store.headPosition(), { timeoutMs: 60_000 });
  // The event loop's delay since the last SIGUSR2, printed and reset at each (loopDelay below).
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  // Garbage collection over the same window: its pauses are one cause of a long delay.
  let gc = { ms: 0, maxMs: 0 };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gc.ms += e.duration;
      gc.maxMs = Math.max(gc.maxMs, e.duration);
    }
  }).observe({ entryTypes: ['gc'] });
  process.on('SIGUSR2', () => {
    const ms = (ns: number) => Number((ns / 1e6).toFixed(1));
    const delay: LoopDelay = {
      p50: ms(loop.percentile(50)),
      p99: ms(loop.percentile(99)),
      max: ms(loop.max),
      gcMs: Math.round(gc.ms),
      gcMaxMs: Number(gc.maxMs.toFixed(1)),
    };
    gc = { ms: 0, maxMs: 0 };
    process.stdout.write(`LOOP ${JSON.stringify(delay)}\n`);
    loop.reset();
  });
  process.once('SIGTERM', () => {
    void app
      .close()
      .then(() => runtime.close())
      .finally(() => process.exit(0));
  });
  return ready;
}

// ---- parent ------------------------------------------------------------------------------

/** The server's event-loop delay, ms. */
interface LoopDelay {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** Garbage collection over the window: its total and its longest pause, ms. */
  readonly gcMs: number;
  readonly gcMaxMs: number;
}

/** The server's event-loop delay since the previous call (the first: since it was ready). */
function loopDelay(child: ChildProcess): Promise<LoopDelay> {
  return new Promise((resolve) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /LOOP (\{.*\})\n/.exec(out);
      if (!m) return;
      child.stdout!.off('data', onData);
      resolve(JSON.parse(m[1]!) as LoopDelay);
    };
    child.stdout!.on('data', onData);
    child.kill('SIGUSR2');
  });
}

function startChild(
  env: Record<string, string>,
  profileDir?: string,
): Promise<{ child: ChildProcess; ready: Ready }> {
  return new Promise((resolve, reject) => {
    const prof = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
    const child = spawn(process.execPath, [...NODE_FLAGS, ...prof, SELF, '--serve'], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /READY (\{.*\})\n/.exec(out);
      if (m) resolve({ child, ready: JSON.parse(m[1]!) as Ready });
    });
    child.once('exit', (code) => reject(new Error(`server exited (${code}) before it was ready`)));
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

interface Posted {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly ok: number;
  readonly failed: number;
}

async function post(
  url: string,
  seconds: number,
  senders: number,
  body: string,
  headers: Record<string, string>,
  freshId: string,
  rate = 0,
): Promise<Posted> {
  const r = await autocannon({
    url,
    connections: senders,
    duration: seconds,
    // Paced (requests a second over all senders), latencies corrected for coordinated omission.
    ...(rate > 0 ? { overallRate: rate } : {}),
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
    // A real sender names each delivery: the dedup reservation runs as in production.
    requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, [freshId]: randomUUID() } }) }],
  });
  return {
    rps: r['2xx'] / seconds,
    p50: r.latency.p50,
    p99: r.latency.p99,
    ok: r['2xx'],
    failed: r.non2xx + r.errors + r.timeouts,
  };
}

async function instanceReceiver(port: number, seconds: number, senders: number): Promise<Posted> {
  const signature = `sha256=${createHmac('sha256', SECRET).update(BODY).digest('hex')}`;
  return post(
    `http://127.0.0.1:${port}/webhooks/codehost`,
    seconds,
    senders,
    BODY,
    { 'x-hub-signature-256': signature, 'x-github-event': 'push' },
    'x-github-delivery',
  );
}

const FIVE_RULES = [
  ...[1, 2, 3, 4].map((n) => ({
    id: `skip-${n}`,
    source: `(d) => (d.event_type === 'never.${n}' ? { drop: true } : 'continue')`,
  })),
  { id: 'inbox', source: "(d) => ({ route: 'inbox' })" },
];

interface AgentPath {
  readonly rules: number;
  readonly posted: Posted;
  readonly doorbell: readonly number[];
  /** The same rings timed from the POST's 202 (negative: heard before the answer arrived). */
  readonly ringAfterAck: readonly number[];
  readonly claimed: number;
  /** Todos claimed when the posting ended (the server's CPU snapshot follows at once). */
  readonly claimedWhilePosting: number;
  readonly unique: number;
  readonly claimedPerS: number;
  /** Doorbell notifications the agents' clients heard (all of them together). */
  readonly notified: number;
  /** How long each agent call took: a claim_next that got a todo, one that found none, complete. */
  readonly calls: { readonly claimMs: number[]; readonly emptyMs: number[]; readonly completeMs: number[] };
}

async function agentPath(
  ready: Ready,
  rules: number,
  seconds: number,
  senders: number,
  agentCount: number,
  rate: number,
  idle: boolean,
  afterRules: () => void = () => {},
  postsDone: () => Promise<void> = async () => {},
): Promise<AgentPath> {
  const base = `http://127.0.0.1:${ready.port}`;
  const mcp = (v: Vended) => `${base}/mcp/${v.slug}`;
  const ingest = (v: Vended) => `${base}/webhooks/w/${v.ingestToken}`;

  // Agents: claim_next until empty, then wait for a ring (or 50 ms) and try again.
  let wake: Array<() => void> = [];
  let heardByAgents = 0;
  const ringAgents = () => {
    heardByAgents++;
    const w = wake;
    wake = [];
    for (const f of w) f();
  };
  const agents = await Promise.all(
    Array.from({ length: agentCount }, () => connectAgent(mcp(ready.load), ready.load.token, ringAgents)),
  );
  await Promise.all(agents.map((a) => a.client.subscribeResource({ uri: QUEUE_URI })));
  // With no agents (--agents 0: the hand-off alone), a client of its own sets the rules.
  const setter = agents[0] ?? (await connectAgent(mcp(ready.load), ready.load.token));
  await setter.call('set_webhook_rules', {
    webhook_id: ready.load.webhookId,
    rules: FIVE_RULES.slice(FIVE_RULES.length - rules),
  });
  if (setter !== agents[0]) await setter.client.close();
  afterRules();

  const ids: string[] = [];
  let stopDraining = false;
  let lastClaimAt = 0;
  const claimMs: number[] = [];
  const emptyMs: number[] = [];
  const completeMs: number[] = [];
  // --idle-agents: connected and subscribed, hearing every ring, but never claiming.
  const drained = agents.map(async (a) => {
    while (!stopDraining && !idle) {
      let t = performance.now();
      const next = await a.call('claim_next', {});
      const todo = next.todo as { id: string } | null;
      (todo ? claimMs : emptyMs).push(performance.now() - t);
      if (!todo) {
        await Promise.race([new Promise<void>((r) => wake.push(r)), sleep(50)]);
        continue;
      }
      ids.push(todo.id);
      lastClaimAt = performance.now();
      t = performance.now();
      await a.call('complete', { todo_id: todo.id, lease_id: next.lease_id });
      completeMs.push(performance.now() - t);
    }
  });

  // The doorbell probe: one POST at a time to its own endpoint, every 50 ms.
  let heard: (() => void) | undefined;
  const listener = await connectAgent(mcp(ready.probe), ready.probe.token, () => heard?.());
  await listener.client.subscribeResource({ uri: QUEUE_URI });
  const doorbell: number[] = [];
  const ringAfterAck: number[] = [];
  let probing = true;
  const probe = (async () => {
    while (probing) {
      const rung = new Promise<number>((r) => {
        heard = () => r(performance.now());
      });
      const t = performance.now();
      const res = await fetch(ingest(ready.probe), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'webhook-id': randomUUID() },
        body: BODY,
      });
      await res.arrayBuffer();
      const acked = performance.now();
      if (res.status === 202) {
        const at = await Promise.race([rung, sleep(5_000).then(() => Number.NaN)]);
        if (!Number.isNaN(at)) {
          doorbell.push(at - t);
          ringAfterAck.push(at - acked);
        }
      }
      heard = undefined;
      await sleep(50);
    }
  })();

  const started = performance.now();
  const posted = await post(ingest(ready.load), seconds, senders, BODY, {}, 'webhook-id', rate);
  const claimedWhilePosting = ids.length;
  await postsDone();
  probing = false;
  await probe;
  // Every acknowledged delivery is a todo (and a POST still in flight when the run ended may have
  // made one more): drain until all are claimed and nothing new has come for half a second.
  const deadline = performance.now() + 120_000;
  while (
    agentCount > 0 &&
    !idle &&
    performance.now() < deadline &&
    (ids.length < posted.ok || performance.now() - lastClaimAt < 500)
  ) {
    await sleep(50);
  }
  stopDraining = true;
  const notified = heardByAgents;
  ringAgents();
  await Promise.all(drained);
  await Promise.all([...agents, listener].map((a) => a.client.close()));
  return {
    rules,
    posted,
    doorbell,
    ringAfterAck,
    claimed: ids.length,
    claimedWhilePosting,
    unique: new Set(ids).size,
    claimedPerS: ids.length / ((lastClaimAt - started) / 1000),
    notified,
    calls: { claimMs, emptyMs, completeMs },
  };
}

async function main(): Promise<void> {
  const values = benchArgs(
    {
      script: 'bench:agent',
      summary:
        "Senders post to an endpoint's webhook (no rules, then 5) while MCP SDK agents drain the queue with claim_next/complete and a probe times the doorbell; deliveries/s, the POST's and the doorbell's p50/p99, todos claimed a second, and the ratio to the instance receiver's rate in the same run, per mode.",
      environment: { HOOKLINE_BENCH_PG_URL: PG_URL_HELP },
    },
    {
      serve: { type: 'boolean', default: false }, // a child process's role
      duration: { type: 'string', default: '10', value: 'S', describe: 'seconds of posting a phase' },
      senders: { type: 'string', default: '16', value: 'N', describe: 'concurrent senders' },
      rate: {
        type: 'string',
        default: '0',
        value: 'R',
        describe:
          "the webhook's deliveries a second over all senders (0: as fast as they go; the instance receiver always is)",
      },
      agents: {
        type: 'string',
        default: '4',
        value: 'N',
        describe: 'MCP SDK agents draining (0: the hand-off alone, nothing claimed)',
      },
      'idle-agents': {
        type: 'boolean',
        default: false,
        describe:
          'the agents connect and subscribe to the queue but never claim: what their sessions and the doorbell cost the hand-off',
      },
      only: { type: 'string', default: 'postgres,embedded', value: 'LIST', describe: 'the modes run' },
      rules: { type: 'string', default: '0,5', value: 'LIST', describe: "the webhook's rule counts run" },
      'cpu-prof': { type: 'string', value: 'DIR', describe: "the server's V8 CPU profile, to DIR/<mode>" },
      statements: {
        type: 'boolean',
        default: false,
        describe:
          'PostgreSQL: statements a delivery from pg_stat_statements (needs the extension loaded on the server)',
      },
    },
  );

  if (values.serve) {
    const ready = await serve();
    process.stdout.write(`READY ${JSON.stringify(ready)}\n`);
    return;
  }
  const seconds = Number(values.duration);
  const senders = Number(values.senders);
  const agentCount = Number(values.agents);
  const idle = values['idle-agents'];
  const draining = agentCount > 0 && !idle;
  const rate = Number(values.rate);
  const modes = values.only.split(',').map((m) => m.trim()) as Mode[];
  const ruleCounts = values.rules.split(',').map(Number);
  console.log(
    `payload ${Buffer.byteLength(BODY)} bytes, ${senders} senders${rate > 0 ? ` paced to ${rate} deliveries/s` : ''}, ${agentCount}${idle ? ' idle' : ''} agents, ${seconds} s per run; load average at start ${load()} (${os.cpus().length} CPUs)`,
  );
  const rows: Array<Record<string, string | number>> = [];
  let exactlyOnce = true;
  for (const mode of modes) {
    const env: Record<string, string> = {};
    let cleanup = async () => {};
    let database: string | undefined;
    if (mode === 'postgres') {
      const scratch = await createScratchDatabase('agent');
      env.DATABASE_URL = scratch.url;
      database = new URL(scratch.url).pathname.slice(1);
      cleanup = scratch.drop;
    } else {
      const scratch = await scratchDataDir('agent');
      env.HOOKLINE_DATA_DIR = scratch.dir;
      cleanup = scratch.remove;
    }
    const profileDir = values['cpu-prof'] ? path.resolve(values['cpu-prof'], mode) : undefined;
    let delivered = 0;
    try {
      const { child, ready } = await startChild(env, profileDir);
      // CPU of the server process and of its database's backends (PostgreSQL mode), and commits.
      const snapshot = async () => ({
        bench: process.cpuUsage(),
        node: child.pid === undefined ? undefined : cpuSeconds(child.pid),
        sandbox: child.pid === undefined ? undefined : sandboxCpuSeconds(child.pid),
        db: database ? await databaseCounters(BENCH_ADMIN_URL, database) : undefined,
      });
      type Snapshot = Awaited<ReturnType<typeof snapshot>>;
      const costs = (a: Snapshot, b: Snapshot, n: number) => {
        const node =
          a.node !== undefined && b.node !== undefined ? ((b.node - a.node) * 1000) / n : undefined;
        const pgCpu = a.db && b.db ? backendCpu(a.db.backends, b.db.backends) : undefined;
        return {
          'node CPU ms': node === undefined ? '' : Number(node.toFixed(3)),
          'sandbox CPU ms':
            a.sandbox !== undefined && b.sandbox !== undefined
              ? Number((((b.sandbox - a.sandbox) * 1000) / n).toFixed(3))
              : '',
          'pg CPU ms': pgCpu === undefined ? '' : Number(((pgCpu * 1000) / n).toFixed(3)),
          // This process: the senders, the agents' and the probe's MCP clients (they share the cores).
          'bench CPU ms': Number(
            ((b.bench.user + b.bench.system - a.bench.user - a.bench.system) / 1000 / n).toFixed(3),
          ),
          'commits/delivery':
            a.db && b.db ? Number(((b.db.xactCommit - a.db.xactCommit) / n).toFixed(2)) : '',
        };
      };
      /** The database's statements by calls per delivery (pg_stat_statements, cluster-wide, this database). */
      const statements = async (n: number, top = 25) => {
        if (!database || !values.statements) return;
        const client = new pg.Client({ connectionString: BENCH_ADMIN_URL });
        await client.connect();
        try {
          const r = await client.query<{ calls: string; ms: number; query: string }>(
            `select s.calls::text, s.total_exec_time as ms, s.query from pg_stat_statements s
             join pg_database d on d.oid = s.dbid where d.datname = $1 order by s.calls desc limit $2`,
            [database, top],
          );
          for (const row of r.rows) {
            const calls = (Number(row.calls) / n).toFixed(2).padStart(7);
            const ms = (row.ms / n).toFixed(3).padStart(7);
            console.log(`    ${calls} calls ${ms} ms  ${row.query.replace(/\s+/g, ' ').slice(0, 150)}`);
          }
          await client.query(
            `select pg_stat_statements_reset(0, (select oid from pg_database where datname = $1), 0)`,
            [database],
          );
        } finally {
          await client.end();
        }
      };
      try {
        delivered += (await instanceReceiver(ready.port, 2, senders)).ok; // warm-up
        const base = `http://127.0.0.1:${ready.port}`;
        let metrics = await scrapeMetrics(base);
        await statements(1, 0);
        let before = await snapshot();
        const instance = await instanceReceiver(ready.port, seconds, senders);
        delivered += instance.ok;
        await sleep(500);
        const instanceCosts = costs(before, await snapshot(), instance.ok);
        console.log(
          `  ${mode}, instance receiver: ${instance.ok} deliveries, per delivery ${JSON.stringify(instanceCosts)}`,
        );
        const phase = async (name: string) => {
          const now = await scrapeMetrics(base);
          console.log(`  ${mode}, ${name}: ${formatWriterStats(writerStats(metrics, now))}`);
          metrics = now;
        };
        await phase('instance receiver');
        await statements(instance.ok);
        for (const rules of ruleCounts) {
          before = await snapshot();
          // The sandbox starts when the rules are saved (their compile check): its start-up is left out.
          // The CPU of the posting window too: what the rate depends on (the agents' calls made
          // meanwhile included, not the drain of the backlog after it).
          let posting: Snapshot | undefined;
          let postingLoop: LoopDelay | undefined;
          let schedFrom: { at: number; sched: ReturnType<typeof mainThreadSched> } | undefined;
          let schedShare = '';
          const r = await agentPath(
            ready,
            rules,
            seconds,
            senders,
            agentCount,
            rate,
            idle,
            () => {
              if (child.pid !== undefined) before = { ...before, sandbox: sandboxCpuSeconds(child.pid) };
              void loopDelay(child); // from here on
              schedFrom = { at: performance.now(), sched: mainThreadSched(child.pid) };
            },
            async () => {
              const sched = mainThreadSched(child.pid);
              if (schedFrom?.sched && sched) {
                const windowNs = (performance.now() - schedFrom.at) * 1e6;
                const pct = (ns: number) => `${((100 * ns) / windowNs).toFixed(0)}%`;
                schedShare = `; its main thread on a core ${pct(sched.runNs - schedFrom.sched.runNs)} of the window, waiting for one ${pct(sched.waitNs - schedFrom.sched.waitNs)}`;
              }
              posting = await snapshot();
              postingLoop = await loopDelay(child);
            },
          );
          delivered += r.posted.ok;
          const after = await snapshot();
          const agentCosts = costs(before, after, r.posted.ok);
          console.log(
            `  ${mode}, ${rules} rules: per delivery (claims and completions included) ${JSON.stringify(agentCosts)}`,
          );
          if (posting) {
            const {
              'node CPU ms': node,
              'pg CPU ms': pgCpu,
              'bench CPU ms': bench,
            } = costs(before, posting, r.posted.ok);
            console.log(
              `  ${mode}, ${rules} rules: per delivery while posting (the agents' calls meanwhile included) node CPU ms ${node}, pg CPU ms ${pgCpu}, bench CPU ms ${bench}; server event-loop delay p50 ${postingLoop?.p50} ms, p99 ${postingLoop?.p99} ms, max ${postingLoop?.max} ms; its garbage collection ${postingLoop?.gcMs} ms, longest pause ${postingLoop?.gcMaxMs} ms${schedShare}`,
            );
          }
          const drainedAfter = r.claimed - r.claimedWhilePosting;
          if (posting && drainedAfter > 0) {
            // The backlog's drain alone: nothing posts any more, so this is what a claim and its
            // completion cost (with the server's idle work over the drain, a few percent).
            const {
              'node CPU ms': node,
              'pg CPU ms': pgCpu,
              'bench CPU ms': bench,
            } = costs(posting, after, drainedAfter);
            console.log(
              `  ${mode}, ${rules} rules: per claim_next and complete after the posting (${drainedAfter} todos drained) node CPU ms ${node}, pg CPU ms ${pgCpu === '' ? 'n/a (embedded)' : pgCpu}, bench CPU ms ${bench} (the agents' MCP clients)`,
            );
          }
          await phase(`${rules} rules (agents' claims and completions included)`);
          await statements(r.posted.ok);
          const pp = (xs: number[]) =>
            `${xs.length} calls, p50 ${percentile(xs, 0.5).toFixed(1)} ms, p99 ${percentile(xs, 0.99).toFixed(1)} ms`;
          console.log(
            `  ${mode}, ${rules} rules: agents' claim_next with a todo ${pp(r.calls.claimMs)}; empty ${pp(r.calls.emptyMs)}; complete ${pp(r.calls.completeMs)}; ${(r.notified / r.posted.ok).toFixed(2)} doorbell notifications heard by the agents a delivery`,
          );
          // No agents draining (--agents 0, --idle-agents): nothing is claimed, nothing to check.
          const once = !draining || (r.claimed >= r.posted.ok && r.unique === r.claimed);
          exactlyOnce &&= once;
          rows.push({
            mode,
            rules,
            'deliveries/s': Math.round(r.posted.rps),
            'POST p50 ms': r.posted.p50,
            'POST p99 ms': r.posted.p99,
            'doorbell p50 ms': Number(percentile(r.doorbell, 0.5).toFixed(1)),
            'doorbell p99 ms': Number(percentile(r.doorbell, 0.99).toFixed(1)),
            rings: r.doorbell.length,
            '202 to ring p50 ms': Number(percentile(r.ringAfterAck, 0.5).toFixed(1)),
            '202 to ring p99 ms': Number(percentile(r.ringAfterAck, 0.99).toFixed(1)),
            'claimed/s': draining ? Math.round(r.claimedPerS) : 'n/a',
            'instance/s': Math.round(instance.rps),
            ratio: `${((r.posted.rps / instance.rps) * 100).toFixed(0)}%`,
            'claimed once':
              agentCount === 0
                ? 'n/a (no agents)'
                : idle
                  ? 'n/a (idle agents)'
                  : once
                    ? `yes (${r.claimed})`
                    : `NO: ${r.unique} of ${r.claimed} for ${r.posted.ok}`,
            'non-2xx': r.posted.failed,
            // The server's peak so far: this phase and every one before it in this mode.
            'server peak MB':
              child.pid === undefined ? 'n/a' : Math.round(peakRssMb(child.pid) ?? Number.NaN),
          });
          console.log(`  ${mode}, ${rules} rules: done (load average ${load()})`);
        }
      } finally {
        await stopChild(child);
      }
      if (profileDir) {
        await mkdir(profileDir, { recursive: true });
        await writeFile(path.join(profileDir, 'deliveries'), `${delivered}\n`);
      }
    } finally {
      await cleanup();
    }
  }
  console.table(rows);
  console.log(`load average at end: ${load()}`);
  console.log(
    'targets: deliveries/s >= 50% of instance/s; POST p99 < 50 ms at 16 senders; doorbell p99 < 50 ms at 1,000 deliveries/s (PostgreSQL); every todo claimed once',
  );
  if (!exactlyOnce) process.exitCode = 1;
}

await main();
