/**
 * Summarizes the V8 CPU profiles `node bench/ingest.ts --cpu-prof DIR` leaves for one server
 * (every thread writes its own `.cpuprofile`) into CPU microseconds per delivery by stage.
 *
 * Each sample goes to the stage of the frame nearest the leaf that is hookline's own code
 * (src/, projections/), by its file; a sample with none of our frames on its stack goes to the
 * library or V8 bucket at its leaf (Fastify and node:http, pg, garbage collection, …). Idle time
 * is left out. The whole life of the process counts (start-up, warm-up and run), divided by the
 * deliveries of warm-up and run (the `deliveries` file the benchmark writes beside the profiles).
 *
 * `node bench/profile-summary.ts DIR/postgres-round1`
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Our own code, by file: the first pattern that matches names the stage. */
const OWN: [RegExp, string][] = [
  [/\/src\/ingest\/signatures\//, 'signature check'],
  [/\/src\/(providers|ingest\/(extract|sanitize))/, 'provider parsing and sanitizing'],
  [/\/src\/ingest\/(body|receive|source-ip|token)/, 'HTTP and body (hookline)'],
  [/\/src\/ingest\//, 'ingestion (recorder, dedup)'],
  [/\/src\/eventstore\/codec/, 'event encoding'],
  [/\/src\/eventstore\/sql\/(subscription|reads|tail|listener|wakeup|positions)/, 'subscriptions and reads'],
  [/\/src\/eventstore\//, 'the append'],
  [/\/src\/domain\//, 'domain decisions'],
  [/\/projections\/([a-z-]+)\./, 'projection $1'],
  [/\/src\/live\/sse/, 'SSE'],
  [/\/src\/live\//, 'live hub'],
  [/\/src\/(http|app|server)/, 'HTTP and body (hookline)'],
  [/\/src\/db\//, 'database access'],
  [/\/(src|projections)\//, 'other hookline code'],
];

/** Where no frame of ours is on the stack: by the leaf frame. */
function foreign(frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame;
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (functionName === '(program)') return 'V8 and native (unattributed)';
  if (/fastify|find-my-way|light-my-request|avvio|node:_http|node:http|node:net|node:stream/.test(url))
    return 'HTTP and body (Fastify, node:http)';
  if (/node_modules\/(pg|pg-protocol|pg-pool|kysely)/.test(url)) return 'pg driver (unattributed)';
  if (/node:crypto|node:internal\/crypto/.test(url)) return 'crypto (unattributed)';
  if (/node:internal\/(modules|main)|node:internal\/process\/esm/.test(url)) return 'module loading';
  return 'other (libraries, Node internals)';
}

const IGNORED = new Set(['(idle)', '(root)']);

function summarize(dir: string): { stages: Map<string, number>; deliveries: number } {
  const deliveries = Number(readFileSync(path.join(dir, 'deliveries'), 'utf8').trim());
  const stages = new Map<string, number>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as Profile;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const stageOf = new Map<number, string | null>();
    const classify = (id: number): string | null => {
      const known = stageOf.get(id);
      if (known !== undefined) return known;
      const leaf = byId.get(id)!;
      let stage: string | null = null;
      if (!IGNORED.has(leaf.callFrame.functionName)) {
        for (let at: number | undefined = id; at !== undefined && stage === null; at = parent.get(at)) {
          const { url } = byId.get(at)!.callFrame;
          for (const [pattern, name] of OWN) {
            const m = pattern.exec(url);
            if (m) {
              stage = name.replace('$1', m[1] ?? '');
              break;
            }
          }
        }
        stage ??= foreign(leaf.callFrame);
      }
      stageOf.set(id, stage);
      return stage;
    };
    profile.samples.forEach((id, i) => {
      const stage = classify(id);
      // timeDeltas[i] is the time before sample i; the sample's own span is the next delta.
      const span = profile.timeDeltas[i + 1] ?? 0;
      if (stage !== null) stages.set(stage, (stages.get(stage) ?? 0) + span);
    });
  }
  return { stages, deliveries };
}

const USAGE = `Usage: node bench/profile-summary.ts DIR [DIR ...]

Sums the V8 CPU profiles a benchmark's --cpu-prof left in each DIR (one server's: DIR/postgres-round1
from bench:ingest, DIR/postgres from bench:agent) into CPU microseconds a delivery by stage, from
the .cpuprofile files and the deliveries file beside them. bench/README.md tells how to read it.
`;
const dirs = process.argv.slice(2);
if (dirs.includes('--help') || dirs.includes('-h')) {
  process.stdout.write(USAGE);
  process.exit(0);
}
if (dirs.length === 0 || dirs.some((d) => d.startsWith('-'))) {
  process.stderr.write(USAGE);
  process.exit(2);
}

for (const dir of dirs) {
  const { stages, deliveries } = summarize(dir);
  const total = [...stages.values()].reduce((a, b) => a + b, 0);
  console.log(`${dir}: ${deliveries} deliveries, ${(total / 1e6).toFixed(2)} s CPU sampled (idle left out)`);
  console.log('stage                                   µs per delivery  share');
  for (const [stage, us] of [...stages].sort((a, b) => b[1] - a[1])) {
    console.log(
      `${stage.padEnd(40)} ${(us / deliveries).toFixed(1).padStart(15)}  ${((us / total) * 100).toFixed(1).padStart(4)}%`,
    );
  }
  console.log(`${'total'.padEnd(40)} ${(total / deliveries).toFixed(1).padStart(15)}`);
}
