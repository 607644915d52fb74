/**
 * Projection rebuild benchmark (design.md, "Targets": 1,000,000 deliveries rebuilt in under 60 s
 * on PostgreSQL). Seeds the `deliveries` stream of a fresh database with N delivery events straight
 * in SQL (not timed; in transactions of 100,000, as many writers would have left them), then
 * rebuilds the read models that follow deliveries through the same code as
 * `hookline projections rebuild`, one after another, and prints events per second for each.
 * `npm run bench:rebuild` (`-- --help` for the options).
 */
import os from 'node:os';
import { sql } from 'kysely';
import { createLogCounter } from '../projections/engine/lag.ts';
import { createLockSession } from '../projections/engine/lock.ts';
import { type RebuildDeps, rebuildProjection } from '../projections/engine/rebuild.ts';
import { allProjections } from '../projections/index.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { openPostgres } from '../src/db/open.ts';
import { createSqlEventStore } from '../src/eventstore/sql/store.ts';
import { benchArgs, PG_URL_HELP } from './args.ts';
import { formatMb, peakRssMb, resetPeakRss } from './memory.ts';
import { prose } from './payload.ts';
import { createScratchDatabase } from './scratch-database.ts';

const SEED_CHUNK = 100_000;

const args = benchArgs(
  {
    script: 'bench:rebuild',
    summary:
      'Seeds a fresh database with delivery events (not timed), then rebuilds the read models that follow deliveries, one after another, and prints events a second for each.',
    environment: { HOOKLINE_BENCH_PG_URL: PG_URL_HELP },
  },
  {
    events: { type: 'string', default: '1000000', value: 'N', describe: 'delivery events seeded' },
    payload: { type: 'string', default: '1536', value: 'BYTES', describe: 'payload size of each' },
    only: {
      type: 'string',
      default: 'log,providers,stream_stats',
      value: 'LIST',
      describe: 'the read models rebuilt',
    },
  },
);
const total = Number(args.events);
const payloadBytes = Number(args.payload);
const names = args.only.split(',').map((s) => s.trim());

const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

async function main(): Promise<void> {
  const scratch = await createScratchDatabase('rebuild');
  // The seed inserts SEED_CHUNK rows a statement, longer than the serving bound on statements.
  const database = openPostgres(scratch.url, { queryTimeoutMs: 0 });
  console.log(`load average ${load()} on ${os.cpus().length} cores`);
  try {
    await migrateToLatest(database.db);
    await seed(database.db);
    const store = await createSqlEventStore(database);
    const log = { info() {}, warn: (o: object, m: string) => console.warn(m, o) };
    const locks = database.pool ? createLockSession(database.pool, log) : undefined;
    const deps: RebuildDeps = {
      sql: database,
      store,
      counter: createLogCounter(store, database),
      log,
      locks,
      batchSize: 1000, // the runner's default on PostgreSQL
    };
    resetPeakRss(); // the peak of the rebuilds, not of seeding the log
    console.error('RSS after seeding', process.memoryUsage().rss / 1e6);
    console.log('projection        events    seconds   events/s');
    let sum = 0;
    for (const name of names) {
      const projection = allProjections.find((p) => p.name === name);
      if (!projection) throw new Error(`no projection named ${name}`);
      const started = performance.now();
      let last = 0;
      const result = await rebuildProjection(deps, projection, {
        onProgress: (p) => {
          if (performance.now() - last < 5000) return;
          last = performance.now();
          process.stderr.write(
            `  ${name}: ${p.done}/${p.total} ${Math.round(p.ratePerSecond)}/s ETA ${p.etaSeconds?.toFixed(0) ?? '?'} s\n`,
          );
        },
      });
      const seconds = (performance.now() - started) / 1000;
      sum += seconds;
      console.log(
        `${name.padEnd(14)} ${String(result.events).padStart(9)} ${seconds.toFixed(1).padStart(10)} ${Math.round(
          result.events / seconds,
        )
          .toLocaleString('en-US')
          .padStart(10)}`,
      );
    }
    console.log(
      `all of them: ${sum.toFixed(1)} s; load average ${load()}; peak RSS ${formatMb(peakRssMb())}`,
    );
    console.log('target: 1,000,000 deliveries rebuilt in under 60 s on PostgreSQL (design.md)');
    await locks?.close();
    await store.close();
  } finally {
    await database.close();
    await scratch.drop();
  }
}

/** N `DeliveryReceived` events on `deliveries`, one a second up to now, three providers in turn. */
async function seed(db: ReturnType<typeof openPostgres>['db']): Promise<void> {
  const started = performance.now();
  for (let from = 1; from <= total; from += SEED_CHUNK) {
    const to = Math.min(total, from + SEED_CHUNK - 1);
    await sql`
      insert into es_events (stream_id, revision, event_id, event_type, content_type, data, metadata)
      select 'deliveries', g - 1,
        -- time-ordered like the UUIDv7 the recorder gives each delivery
        (lpad(to_hex(g), 12, '0') || '7000' || '8000' || lpad(to_hex(g), 12, '0'))::uuid,
        'DeliveryReceived', 'application/octet-stream',
        convert_to('{"n":' || g || ',"pad":"' || ${prose(payloadBytes - 20)}::text || '"}', 'UTF8'),
        convert_to(json_build_object(
          'provider', (array['codehost', 'payments', 'chat'])[1 + g % 3],
          'family', 'webhook', 'trust_mode', 'signed', 'verified', true, 'verify_detail', 'signature ok',
          'event_type', 'push', 'external_id', null, 'content_type', 'application/json',
          'source_ip', '127.0.0.1', 'headers', json_build_object('content-type', 'application/json'),
          'received_at', to_char((now() - (${total}::int - g) * interval '1 second') at time zone 'UTC',
            'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'payload_size', ${payloadBytes}::int)::text, 'UTF8')
      from generate_series(${from}::int, ${to}::int) g`.execute(db);
    process.stderr.write(`  seeded ${to}/${total}\n`);
  }
  await sql`insert into es_streams (stream_id, revision) values ('deliveries', ${total - 1})`.execute(db);
  await sql`analyze es_events`.execute(db);
  console.log(
    `seeded ${total} deliveries of ${payloadBytes} bytes in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
}

await main();
