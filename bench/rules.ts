/**
 * Routing rules benchmark (issue 7, point 9): what rules cost per delivery, and what they do to
 * ingestion. Part 1 evaluates a list of 5 rules in the sandbox, one delivery at a time and then 16
 * at once, and prints p50/p99 per evaluation, evaluations a second, and the CPU an evaluation
 * costs in this process and in the sandbox process. Part 2 runs hookline in this process (embedded
 * mode, its own PostgreSQL in a scratch data directory) and drives POST /webhooks/w/<token> with
 * autocannon on a webhook with 5 rules and on one with none. `npm run bench:rules` (`-- --help`).
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import autocannon from 'autocannon';
import { createRuleEngine, type RuleSource, toRuleDelivery } from '../rules-sandbox/index.ts';
import { buildApp } from '../src/app.ts';
import { packageVersion } from '../src/cli/package.ts';
import { loadConfig } from '../src/config.ts';
import { ALL_VERBS } from '../src/domain/endpoint/verbs.ts';
import { vendEndpoint } from '../src/endpoints/vend.ts';
import { jsonEvent } from '../src/eventstore/codec.ts';
import { createRuntime } from '../src/runtime.ts';
import { benchArgs } from './args.ts';
import { prose } from './payload.ts';
import { scratchDataDir } from './scratch-data-dir.ts';

const values = benchArgs(
  {
    script: 'bench:rules',
    summary:
      'Part evaluation: 5 rules evaluated in the sandbox, one delivery at a time and 16 at once (p50/p99, evaluations a second, CPU). Part ingest: POST /webhooks/w/<token> on a webhook with 5 rules and on one with none, embedded mode.',
  },
  {
    evaluations: {
      type: 'string',
      default: '2000',
      value: 'N',
      describe: 'evaluations timed in the evaluation part',
    },
    duration: {
      type: 'string',
      default: '10',
      value: 'S',
      describe: 'seconds of load per webhook in the ingest part',
    },
    connections: {
      type: 'string',
      default: '16',
      value: 'N',
      describe: 'concurrent connections in the ingest part',
    },
    parts: { type: 'string', default: 'evaluation,ingest', value: 'LIST', describe: 'which parts to run' },
  },
);
const parts = new Set(values.parts.split(',').map((p) => p.trim()));

/** Five rules of the kind people write: header checks, event types, a payload field, a default. */
const RULES: RuleSource[] = [
  { id: 'pings', source: "(d) => d.headers['x-event'] === 'ping' ? { drop: true } : 'continue'" },
  { id: 'bots', source: "(d) => d.payload?.sender?.type === 'Bot' ? { drop: true } : 'continue'" },
  {
    id: 'private',
    source: "(d) => d.payload?.repository?.private === true ? { quarantine: true } : 'continue'",
  },
  {
    id: 'releases',
    source: "(d) => (d.event_type ?? '').startsWith('release') ? { route: 'inbox' } : 'continue'",
  },
  { id: 'rest', source: "(d) => ({ route: 'inbox' })" },
];

const BODY = JSON.stringify({
  type: 'push',
  sender: { login: 'octo', type: 'User' },
  repository: { full_name: 'acme/api', private: false },
  commits: Array.from({ length: 3 }, (_, i) => ({
    id: `c${i}`.padEnd(40, '0'),
    message: 'Update README.md',
  })),
  padding: prose(900),
});

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

/** User + system CPU seconds of a process (all its threads), from /proc. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ, 100 on Linux
}

async function evaluationCost(n: number, concurrency: number) {
  const engine = await createRuleEngine();
  try {
    // A delivery as the receiver builds it for each request (the body parsed each time).
    const delivery = () =>
      toRuleDelivery(
        {
          provider: 'webhook:wh_bench',
          event_type: 'push',
          content_type: 'application/json',
          headers: { 'content-type': 'application/json', 'x-event': 'push' },
          received_at: new Date().toISOString(),
        },
        new TextEncoder().encode(BODY),
      );
    for (let i = 0; i < 50; i++) await engine.evaluate(RULES, delivery()); // compile and warm up
    const sandboxPid = (await engine.stats()).pid;
    const times: number[] = [];
    const hostBefore = process.cpuUsage();
    const sandboxBefore = sandboxPid === null ? 0 : cpuSeconds(sandboxPid);
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < n) {
          next += 1;
          const t = performance.now();
          const outcome = await engine.evaluate(RULES, delivery());
          times.push(performance.now() - t);
          if (outcome.kind !== 'routed') throw new Error(`unexpected outcome ${JSON.stringify(outcome)}`);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const host = process.cpuUsage(hostBefore);
    const sandboxCpu = sandboxPid === null ? Number.NaN : cpuSeconds(sandboxPid) - sandboxBefore;
    times.sort((a, b) => a - b);
    return {
      n,
      concurrency,
      p50: pct(times, 0.5),
      p99: pct(times, 0.99),
      perSecond: n / seconds,
      hostCpuMs: (host.user + host.system) / 1000 / n,
      sandboxCpuMs: (sandboxCpu * 1000) / n,
      stats: await engine.stats(),
    };
  } finally {
    await engine.close();
  }
}

async function ingestThroughput(duration: number, connections: number) {
  const dataDir = await scratchDataDir('rules');
  const config = loadConfig(
    {
      HOOKLINE_DATA_DIR: dataDir.dir,
      HOOKLINE_HOST: '127.0.0.1',
      HOOKLINE_PORT: '0',
      HOOKLINE_LOG_LEVEL: 'silent',
      HOOKLINE_BASE_URL: 'http://127.0.0.1',
    },
    packageVersion(),
  );
  const runtime = await createRuntime(config);
  const app = await buildApp(runtime, { requestLogging: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  try {
    const vend = (name: string) =>
      vendEndpoint(
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
    const plain = await vend('bench plain');
    const ruled = await vend('bench ruled');
    await runtime.store.append(`webhook-${ruled.webhookId}`, [
      jsonEvent('WebhookRulesSet', {
        webhook_id: ruled.webhookId,
        by: 'bench',
        at: new Date().toISOString(),
        version: 1,
        rules: RULES,
      }),
    ]);
    await runtime.projections.waitFor(await runtime.store.headPosition(), { timeoutMs: 60_000 });
    const run = async (token: string) => {
      const result = await autocannon({
        url: `http://127.0.0.1:${port}/webhooks/w/${token}`,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-event': 'push' },
        body: BODY,
        connections,
        duration,
      });
      return {
        rps: result.requests.average,
        p50: result.latency.p50,
        p99: result.latency.p99,
        non2xx: result.non2xx,
        errors: result.errors,
      };
    };
    await run(plain.ingestToken); // warm up the database and the routes (discarded)
    const none = await run(plain.ingestToken);
    const five = await run(ruled.ingestToken);
    return { none, five };
  } finally {
    await app.close();
    await runtime.close();
    await dataDir.remove();
  }
}

const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
console.log(`bench:rules on ${os.cpus().length} cores, load average ${load()}`);
for (const concurrency of parts.has('evaluation') ? [1, 16] : []) {
  const cost = await evaluationCost(Number(values.evaluations), concurrency);
  console.log(
    `rule evaluation, 5 rules, ${cost.n} deliveries, ${concurrency} at a time: p50 ${cost.p50.toFixed(3)} ms, ` +
      `p99 ${cost.p99.toFixed(3)} ms, ${cost.perSecond.toFixed(0)}/s; CPU an evaluation ${cost.hostCpuMs.toFixed(3)} ms ` +
      `here, ${cost.sandboxCpuMs.toFixed(3)} ms in the sandbox (compiles ${cost.stats.compiles}, cache hits ` +
      `${cost.stats.cacheHits}, faults ${cost.stats.faults})`,
  );
}
if (!parts.has('ingest')) process.exit(0);
const ingest = await ingestThroughput(Number(values.duration), Number(values.connections));
const line = (name: string, r: typeof ingest.none) =>
  `${name}: ${r.rps.toFixed(0)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, non-2xx ${r.non2xx}, errors ${r.errors}`;
console.log(line('ingest, webhook without rules', ingest.none));
console.log(line('ingest, webhook with 5 rules ', ingest.five));
console.log(
  `with rules / without: ${(ingest.five.rps / ingest.none.rps).toFixed(2)}; load average after ${load()}`,
);
