/**
 * Drain benchmark (issue 6, point 7): agents drain todos over MCP (the SDK's real client over
 * Streamable HTTP against a listening server), each looping claim_next then complete until the
 * queue is empty. Prints todos per second, claim_next and complete latency (p50/p99), and the
 * doorbell latency (a push until the subscribed agent hears notifications/resources/updated).
 * Checks that every todo was claimed exactly once. Run: `npm run bench:drain` (`-- --help` for the
 * options). See bench/README.md.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { loadavg } from 'node:os';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { ALL_VERBS } from '../src/domain/endpoint/verbs.ts';
import { vendEndpoint } from '../src/endpoints/vend.ts';
import { createFollowUps } from '../src/follow-up.ts';
import { createDeliveryRecorder } from '../src/ingest/recorder.ts';
import { createRuntime } from '../src/runtime.ts';
import { pushTodo } from '../src/todos/push.ts';
import { benchArgs, PG_URL_HELP } from './args.ts';
import { connectAgent } from './mcp-agent.ts';
import { scratchDataDir } from './scratch-data-dir.ts';
import { createScratchDatabase } from './scratch-database.ts';

const args = benchArgs(
  {
    script: 'bench:drain',
    summary:
      'Agents drain todos over MCP with claim_next then complete; prints todos a second, claim_next, complete and doorbell latency, and checks every todo was claimed exactly once.',
    environment: { HOOKLINE_BENCH_PG_URL: PG_URL_HELP },
  },
  {
    todos: { type: 'string', default: '10000', value: 'N', describe: 'todos to drain' },
    agents: { type: 'string', default: '8', value: 'N', describe: 'agents draining at once' },
    rings: { type: 'string', default: '200', value: 'N', describe: 'doorbell samples' },
    mode: {
      type: 'string',
      default: 'server',
      value: 'MODE',
      describe: "server (PostgreSQL) | embedded (hookline's own PostgreSQL in a scratch data directory)",
    },
  },
);
const TODOS = Number(args.todos);
const AGENTS = Number(args.agents);
const RINGS = Number(args.rings);

const percentile = (xs: number[], p: number) =>
  xs.length === 0
    ? Number.NaN
    : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const ms = (x: number) => `${x.toFixed(1)} ms`;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

async function main() {
  const embedded = args.mode === 'embedded';
  const database = embedded ? undefined : await createScratchDatabase('drain');
  const dataDir = embedded ? await scratchDataDir('drain') : undefined;
  const databaseUrl = database?.url;
  const port = await freePort();
  const config = loadConfig(
    {
      HOOKLINE_HOST: '127.0.0.1',
      HOOKLINE_PORT: String(port),
      HOOKLINE_LOG_LEVEL: 'warn',
      HOOKLINE_SECRET_KEY: randomBytes(32).toString('base64url'),
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      ...(dataDir ? { HOOKLINE_DATA_DIR: dataDir.dir } : {}),
    },
    'bench',
  );
  const runtime = await createRuntime(config);
  const app = await buildApp(runtime, { requestLogging: false });
  await app.listen({ host: '127.0.0.1', port });
  const { store, clock } = runtime;
  const recorder = createDeliveryRecorder({ store, clock });
  const followUps = createFollowUps({ logger: runtime.logger });
  const agents: Awaited<ReturnType<typeof connectAgent>>[] = [];
  try {
    const ep = await vendEndpoint(
      { store, clock, checkReplayTarget: async () => {} },
      {
        operator: 'bench',
        human: 'bench',
        name: 'drain bench',
        queues: ['inbox'],
        verbs: [...ALL_VERBS],
        expiresAt: null,
        replayTargets: [],
      },
    );
    const url = `${config.baseUrl}/mcp/${ep.slug}`;
    const push = (i: number) =>
      pushTodo(
        { store, clock, recorder, followUps },
        {
          ref: ep.slug,
          operator: 'bench',
          human: 'bench',
          title: `job ${i}`,
          queue: undefined,
          kind: 'bench',
          payload: { i },
          key: null,
          sourceIp: null,
          headers: {},
        },
      );

    // Seed: 32 pushes in flight (each a delivery, a todo and a ring), then let the read models catch up.
    let seeded = 0;
    const seedStart = performance.now();
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (seeded < TODOS) await push(seeded++);
      }),
    );
    await runtime.projections.waitFor(await store.headPosition(), { timeoutMs: 600_000 });
    const seedS = (performance.now() - seedStart) / 1000;

    for (let i = 0; i < AGENTS; i++) agents.push(await connectAgent(url, ep.token));
    const claimLat: number[] = [];
    const completeLat: number[] = [];
    const claimedIds: string[] = [];
    const drainStart = performance.now();
    await Promise.all(
      agents.map(async (agent) => {
        for (;;) {
          let t = performance.now();
          const next = await agent.call('claim_next', {});
          claimLat.push(performance.now() - t);
          const todo = next.todo as { id: string } | null;
          if (!todo) return;
          claimedIds.push(todo.id);
          t = performance.now();
          await agent.call('complete', { todo_id: todo.id, lease_id: next.lease_id });
          completeLat.push(performance.now() - t);
        }
      }),
    );
    const drainS = (performance.now() - drainStart) / 1000;
    const unique = new Set(claimedIds).size;

    // Doorbell: one subscribed agent; a push at a time, timed from the call until the notification.
    let heard: ((at: number) => void) | undefined;
    const listener = await connectAgent(url, ep.token, () => heard?.(performance.now()));
    agents.push(listener);
    await listener.client.subscribeResource({ uri: 'hookline://queues/inbox' });
    const ringLat: number[] = [];
    for (let i = 0; i < RINGS; i++) {
      const rung = new Promise<number>((resolve) => {
        heard = resolve;
      });
      const t = performance.now();
      await push(TODOS + i);
      ringLat.push((await rung) - t);
      heard = undefined;
    }

    await runtime.projections.waitFor(await store.headPosition(), { timeoutMs: 600_000 });
    const states = await runtime.db
      .selectFrom('todos')
      .select((eb) => ['state', eb.fn.countAll<string>().as('n')])
      .where('endpoint_id', '=', ep.endpointId)
      .groupBy('state')
      .execute();

    console.log(
      `\nbench:drain (${embedded ? 'embedded, its own PostgreSQL' : 'server, PostgreSQL'}; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')})`,
    );
    console.table({
      todos: TODOS,
      agents: AGENTS,
      'seed (push) s': Number(seedS.toFixed(1)),
      'drain s': Number(drainS.toFixed(1)),
      'todos/s': Number((TODOS / drainS).toFixed(0)),
      'claim_next p50': ms(percentile(claimLat, 0.5)),
      'claim_next p99': ms(percentile(claimLat, 0.99)),
      'complete p50': ms(percentile(completeLat, 0.5)),
      'complete p99': ms(percentile(completeLat, 0.99)),
      'doorbell p50': ms(percentile(ringLat, 0.5)),
      'doorbell p99': ms(percentile(ringLat, 0.99)),
      'claimed / unique': `${claimedIds.length} / ${unique}`,
      'read model': states.map((s) => `${s.state}=${s.n}`).join(' '),
    });
    if (claimedIds.length !== TODOS || unique !== TODOS) {
      console.error(`FAILED: ${claimedIds.length} claims, ${unique} unique, expected ${TODOS}`);
      process.exitCode = 1;
    }
  } finally {
    for (const a of agents) await a.client.close().catch(() => {});
    await app.close();
    await runtime.close();
    await database?.drop();
    await dataDir?.remove();
  }
}

await main();
