/**
 * Screens benchmark (design.md, "Targets"), on PostgreSQL:
 *
 * 1. SSE fan-out: N clients (default 1,000) connected to GET /events while deliveries are
 *    recorded at R per second (default 500) for S seconds; latency is the time from a delivery's
 *    received_at (stamped by the recorder just before the append) to its arrival at each client.
 *    Prints p50/p99/max and checks that every client got every delivery exactly once; beside it
 *    the parts (append to durable, append to the store's live subscriber, subscriber to client)
 *    and the event-loop delay of the server and of each client group: the clients run in worker
 *    threads, PROBES of them (default 10) in a group of their own whose loop has little to do.
 * 2. The log: log_events seeded with ROWS rows (default 1,000,000) by one generate_series insert;
 *    then GET /log with each filter (htmx fragment), q searches and the full page, p50/p95 over Q requests.
 *
 * The server runs in a child process (its own event loop), the clients in worker threads.
 * `npm run bench:screens` (`-- --help` for the options).
 */
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { benchArgs, PG_URL_HELP } from './args.ts';
import { formatMemory, type Memory, retentionOff, startServer, withDatabase } from './screens-server.ts';
import { type SseRun, sseBench } from './screens-sse.ts';

const args = benchArgs(
  {
    script: 'bench:screens',
    summary:
      'sse: clients on GET /events while deliveries are recorded at a fixed rate; latency from received_at to each client (p50/p99/max, and its parts), every delivery once to every client. log: GET /log with each filter, q searches and the full page over a seeded log_events (p50/p95).',
    environment: { HOOKLINE_BENCH_PG_URL: PG_URL_HELP },
  },
  {
    clients: { type: 'string', default: '1000', value: 'N', describe: 'sse: clients on GET /events' },
    probes: {
      type: 'string',
      default: '10',
      value: 'N',
      describe: 'sse: of them, clients in a lightly loaded worker of their own',
    },
    runs: {
      type: 'string',
      default: '1',
      value: 'N',
      describe: "sse: runs, each on a fresh database and server; ends with each run's p99s and their medians",
    },
    rate: { type: 'string', default: '500', value: 'R', describe: 'sse: deliveries recorded a second' },
    seconds: { type: 'string', default: '10', value: 'S', describe: 'sse: seconds of recording' },
    rows: { type: 'string', default: '1000000', value: 'N', describe: 'log: rows seeded' },
    requests: { type: 'string', default: '200', value: 'N', describe: 'log: requests a query' },
    only: { type: 'string', value: 'PART', describe: 'one part: sse | log' },
    'cpu-prof': {
      type: 'string',
      value: 'DIR',
      describe: "sse: the server's V8 CPU profile of each run, to DIR/sse-runN",
    },
  },
);

const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(xs.length * p) - 1)]!;

async function seedLog(databaseUrl: string, rows: number): Promise<void> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  const started = performance.now();
  // One delivery every 2 s ending now; five providers; seven event types. Each payload names a
  // customer of its own (a search that matches one row) and one of 1,000 teams (one row in 1,000).
  await c.query(
    `insert into log_events (id, event_uuid, position, provider, event_type, trust_mode, verified,
       verify_detail, external_id, content_type, source_ip, payload_size, received_at, search_text)
     select g, gen_random_uuid(), '1:' || g,
       (array['codehost','payments','chat','generic:ci','broker:builds'])[1 + g % 5],
       (array['push','pull_request','issues','release','invoice.paid','message','build'])[1 + (g / 5) % 7],
       'signed', true, 'sha256', null, 'application/json', '127.0.0.1',
       length(t), now() - ($1::int - g) * interval '2 seconds', t
     from generate_series(1, $1::int) g,
       lateral (select '{"n":' || g || ',"customer":"cust' || g || '","team":"acme' || (g % 1000) || '"}' as t) p`,
    [rows],
  );
  await c.query('analyze log_events');
  await c.end();
  console.log(`log: seeded ${rows} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

async function logBench(): Promise<void> {
  const rows = Number(args.rows);
  const requests = Number(args.requests);
  await withDatabase(async (databaseUrl) => {
    const server = await startServer(databaseUrl);
    try {
      await retentionOff(server.url);
      await seedLog(databaseUrl, rows);
      const middle = new Date(Date.now() - rows * 1000).toISOString(); // about half the rows are newer
      const cursor = Buffer.from(`${Date.now() - rows * 1000}.${Math.floor(rows / 2)}`).toString('base64url');
      const cases: [string, string, Record<string, string>][] = [
        ['no filter', '/log', { 'hx-request': 'true' }],
        ['provider', '/log?provider=payments', { 'hx-request': 'true' }],
        ['event_type', '/log?event_type=release', { 'hx-request': 'true' }],
        ['provider + event_type', '/log?provider=chat&event_type=issues', { 'hx-request': 'true' }],
        ['since (time)', `/log?since=${encodeURIComponent(middle)}`, { 'hx-request': 'true' }],
        ['since (event id)', `/log?since=${Math.floor(rows / 2)}`, { 'hx-request': 'true' }],
        ['cursor (middle)', `/log?cursor=${cursor}`, { 'hx-request': 'true' }],
        ['provider + cursor', `/log?provider=codehost&cursor=${cursor}`, { 'hx-request': 'true' }],
        ['limit=200', '/log?limit=200', { 'hx-request': 'true' }],
        ['full page', '/log', {}],
        ['q: one row', `/log?q=cust${Math.floor(rows / 3)}`, { 'hx-request': 'true' }],
        ['q: 1 in 1,000 rows', '/log?q=acme417', { 'hx-request': 'true' }],
        ['q: event type (1 in 7)', '/log?q=release', { 'hx-request': 'true' }],
        ['q + provider', '/log?q=acme417&provider=chat', { 'hx-request': 'true' }],
        ['q + cursor (middle)', `/log?q=acme417&cursor=${cursor}`, { 'hx-request': 'true' }],
      ];
      console.log(`log: ${requests} sequential requests per case at ${rows} rows (HTML, over HTTP)`);
      console.log('  case                     p50 ms   p95 ms   rows');
      for (const [name, path, headers] of cases) {
        const times: number[] = [];
        let shown = 0;
        for (let i = 0; i < requests + 10; i++) {
          const t = performance.now();
          const res = await fetch(`${server.url}${path}`, { headers });
          const body = await res.text();
          if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${body.slice(0, 200)}`);
          if (i >= 10) times.push(performance.now() - t); // the first ten warm up
          shown =
            body.replace(/<template[\s\S]*?<\/template>/g, '').match(/<tr class="log-row"/g)?.length ?? 0;
        }
        console.log(
          `  ${name.padEnd(24)} ${percentile(times, 0.5).toFixed(1).padStart(6)}   ${percentile(times, 0.95).toFixed(1).padStart(6)}   ${shown}`,
        );
      }
      console.log(
        '  targets (design.md): p95 under 20 ms with filters, under 50 ms with q, at 1,000,000 rows',
      );
      console.log(`  ${formatMemory(await server.request<Memory>({ cmd: 'memory' }, 'memory'))}`);
    } finally {
      server.child.send({ cmd: 'stop' });
      await new Promise((r) => server.child.once('exit', r));
    }
  });
}

const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
console.log(`load average ${load()} on ${os.cpus().length} cores`);
if (!args.only || args.only === 'sse') {
  const runs: SseRun[] = [];
  const count = Math.max(1, Number(args.runs));
  for (let i = 1; i <= count; i++) {
    if (count > 1) console.log(`sse run ${i} of ${count}, load average ${load()}`);
    const profileDir = args['cpu-prof'] ? path.resolve(args['cpu-prof'], `sse-run${i}`) : undefined;
    runs.push(
      await sseBench(
        Number(args.clients),
        Number(args.rate),
        Number(args.seconds),
        Number(args.probes),
        profileDir,
      ),
    );
  }
  if (count > 1) {
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
    const column = (name: string, pick: (r: SseRun) => number) =>
      `  ${name.padEnd(40)} ${runs.map((r) => pick(r).toFixed(1).padStart(8)).join('')}   median ${median(runs.map(pick)).toFixed(1)}`;
    console.log(
      [
        `sse: ${count} runs, p99 in ms`,
        column('received_at to client', (r) => r.p99),
        column('append to subscriber', (r) => r.storeP99),
        column('subscriber to client', (r) => r.fromSubscriberP99),
        column('subscriber to client, probes', (r) => r.probeFromSubscriberP99),
        `  every client every delivery once: ${runs.map((r) => (r.everyDeliveryOnce ? 'yes' : 'NO')).join(', ')}`,
      ].join('\n'),
    );
  }
}
if (!args.only || args.only === 'log') await logBench();
console.log(`load average ${load()}`);
