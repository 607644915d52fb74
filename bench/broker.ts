/**
 * Broker benchmark (issue 8, point 5): how many Redis Streams entries per second the broker
 * consumer turns into delivery events (appended before XACK, each through the recorder's
 * external-id reservation), embedded (its own PostgreSQL) and on PostgreSQL. A backlog is written
 * first (not timed); the clock runs from the start of the consumers until every entry is
 * acknowledged. The projections run as in the service, and the time for the log read model to
 * catch up is printed too. Run: `npm run bench:broker` (Node 24; `-- --help` for the options).
 * See bench/README.md.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { loadConfig } from '../src/config.ts';
import { DELIVERIES_STREAM } from '../src/domain/delivery/events.ts';
import { BROKER_GROUP, startBrokerConsumers } from '../src/ingest/broker/index.ts';
import { createIngestion } from '../src/ingest/index.ts';
import { createRuntime } from '../src/runtime.ts';
import { benchArgs, PG_URL_HELP } from './args.ts';
import { scratchDataDir } from './scratch-data-dir.ts';
import { createScratchDatabase } from './scratch-database.ts';

const args = benchArgs(
  {
    script: 'bench:broker',
    summary:
      'Redis Streams entries turned into delivery events a second by the broker consumer (appended before XACK), embedded and on PostgreSQL, from a backlog written first; and the time for the log read model to catch up.',
    environment: {
      HOOKLINE_BENCH_PG_URL: PG_URL_HELP,
      HOOKLINE_BENCH_REDIS_URL: 'Redis (default redis://127.0.0.1:6379)',
    },
  },
  {
    messages: { type: 'string', default: '10000', value: 'N', describe: 'entries in the backlog' },
    size: { type: 'string', default: '1024', value: 'BYTES', describe: 'payload size' },
    only: { type: 'string', value: 'NAME', describe: 'one backend: embedded | postgres' },
    projections: {
      type: 'string',
      default: 'both',
      value: 'WHICH',
      describe:
        'on (read models built alongside, as in the service) | off (the consumer and the log append alone) | both',
    },
    trace: { type: 'boolean', default: false, describe: 'print progress every 3 s' },
    batch: {
      type: 'string',
      default: '200',
      value: 'N',
      describe: "entries per XREADGROUP (COUNT); the service's is 200",
    },
  },
);
const messages = Number(args.messages);
const size = Number(args.size);
const batch = Number(args.batch);
const redisUrl = process.env.HOOKLINE_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

interface Storage {
  readonly env: Record<string, string>;
  cleanup(): Promise<void>;
}

async function embedded(): Promise<Storage> {
  const dataDir = await scratchDataDir('broker');
  return { env: { HOOKLINE_DATA_DIR: dataDir.dir }, cleanup: dataDir.remove };
}

async function postgres(): Promise<Storage> {
  const database = await createScratchDatabase('broker');
  return { env: { DATABASE_URL: database.url }, cleanup: database.drop };
}

async function groupDone(redis: Redis, stream: string): Promise<boolean> {
  const groups = (await redis.xinfo('GROUPS', stream)) as unknown[][];
  if (groups.length === 0) return false; // the consumer has not created its group yet
  const pending = (await redis.xpending(stream, BROKER_GROUP)) as [number, ...unknown[]];
  if (Number(pending[0]) !== 0) return false;
  const fields = groups[0] ?? [];
  const i = fields.indexOf('entries-read');
  return Number(fields[i + 1] ?? 0) === messages;
}

async function run(name: string, storage: Storage, projections: boolean) {
  const stream = `hookline-bench-broker:${randomBytes(4).toString('hex')}`;
  const redis = new Redis(redisUrl, { protocol: 2 });
  const payload = randomBytes(size).toString('base64').slice(0, size);
  for (let start = 0; start < messages; start += 1000) {
    const p = redis.pipeline();
    for (let i = start; i < Math.min(messages, start + 1000); i++) {
      p.xadd(stream, '*', 'payload', payload, 'event_type', 'bench.broker');
    }
    await p.exec();
  }
  const config = loadConfig({
    ...storage.env,
    HOOKLINE_BROKER_URL: redisUrl,
    HOOKLINE_BROKER_CHANNELS: stream,
    HOOKLINE_LOG_LEVEL: 'warn',
  });
  const runtime = await createRuntime(config, { startProjections: projections });
  try {
    const ingestion = createIngestion({ store: runtime.store, config, clock: runtime.clock, db: runtime.db });
    const started = performance.now();
    await startBrokerConsumers(runtime, ingestion.recorder, {
      providers: ingestion.directory,
      batchSize: batch,
    });
    let lastLog = 0;
    while (!(await groupDone(redis, stream))) {
      await new Promise((r) => setTimeout(r, 25));
      if (args.trace && performance.now() - lastLog > 3000) {
        lastLog = performance.now();
        const { revision } = await runtime.store.streamInfo(DELIVERIES_STREAM);
        console.error(`t=${((lastLog - started) / 1000).toFixed(1)}s deliveries=${revision + 1n}`);
      }
    }
    const consumedS = (performance.now() - started) / 1000;
    if (projections) {
      await runtime.projections.waitFor(await runtime.store.headPosition(), {
        projection: 'log',
        timeoutMs: 600_000,
      });
    }
    const projectedS = (performance.now() - started) / 1000;
    const { revision } = await runtime.store.streamInfo(DELIVERIES_STREAM);
    if (Number(revision + 1n) !== messages)
      throw new Error(`expected ${messages} deliveries, found ${revision + 1n}`);
    return {
      storage: name,
      projections: projections ? 'running' : 'off',
      messages,
      'payload B': size,
      'consumed /s': Math.round(messages / consumedS),
      'consume s': consumedS.toFixed(2),
      'log rows /s': projections ? Math.round(messages / projectedS) : '-',
    };
  } finally {
    await runtime.close();
    await redis.del(stream);
    redis.disconnect();
  }
}

const cases = [
  { name: 'embedded', key: 'embedded', storage: embedded },
  { name: 'PostgreSQL', key: 'postgres', storage: postgres },
].filter((c) => !args.only || c.key === args.only);

// 'both': the service as it runs, and the consumer with the log append alone.
const projectionModes =
  args.projections === 'both' ? [true, false] : [args.projections === 'on' || args.projections === 'running'];
const rows = [];
for (const c of cases) {
  for (const projections of projectionModes) {
    const storage = await c.storage();
    try {
      rows.push(await run(c.name, storage, projections));
      console.error(`done: ${c.name}, projections ${projections ? 'running' : 'off'}`);
    } finally {
      await storage.cleanup();
    }
  }
}
console.log(
  `broker consumer: ${messages} entries of ${size} B drained from one stream, one consumer (batches of ${batch})`,
);
console.table(rows);
console.log(
  `load average (1/5/15 min): ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
