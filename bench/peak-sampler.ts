import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { memoryOf, postmasterOf, processTree } from './memory.ts';

/**
 * The memory peaks of embedded mode under load (bench:ingest): the summed RSS and PSS of its
 * PostgreSQL's processes, and hookline's RSS plus that PSS sampled at the same moment, every
 * `everyMs`. The sampling runs on a worker thread: reading `smaps_rollup` of some 27 processes
 * takes 10 to 150 ms a sample (more on a loaded machine), and done on the thread that drives the
 * load it held autocannon's event loop that long five times a second, for the embedded target
 * only (bench/README.md, "Embedded mode on its own PostgreSQL").
 */

export interface EmbeddedPeaks {
  readonly postgres: { rssMb: number; pssMb: number };
  readonly totalMb: number;
  /** Samples taken, and the mean milliseconds one took (the sampler's own cost). */
  readonly samples: number;
  readonly meanSampleMs: number;
  /** The sampling thread's own CPU per sample, milliseconds. */
  readonly meanSampleCpuMs: number;
}

interface Job {
  readonly hooklinePid: number;
  readonly dataDir: string;
  readonly everyMs: number;
}

/** Starts sampling on a worker thread; `stop()` takes a last sample and resolves with the peaks. */
export function sampleEmbeddedPeaks(
  hooklinePid: number,
  dataDir: string,
  everyMs = 200,
): { stop(): Promise<EmbeddedPeaks> } {
  const worker = new Worker(new URL(import.meta.url), {
    workerData: { hooklinePid, dataDir, everyMs } satisfies Job,
  });
  const result = new Promise<EmbeddedPeaks>((resolve, reject) => {
    worker.once('message', (peaks: EmbeddedPeaks) => resolve(peaks));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the memory sampler exited (${code}) without its peaks`)));
  });
  return {
    stop: async () => {
      worker.postMessage('stop');
      const peaks = await result;
      await worker.terminate();
      return peaks;
    },
  };
}

function runSampler({ hooklinePid, dataDir, everyMs }: Job): void {
  let postgres = { rssMb: 0, pssMb: 0 };
  let totalMb = 0;
  let tree: number[] = [];
  let listed = 0;
  let samples = 0;
  let spentMs = 0;
  const cpuAtStart = process.threadCpuUsage();
  const sample = () => {
    const started = performance.now();
    // The process tree (a read of every /proc/<pid>/stat) is listed again every 2 s only.
    if (Date.now() - listed > 2_000) {
      const pm = postmasterOf(dataDir);
      tree = pm ? processTree(pm) : [];
      listed = Date.now();
    }
    const pg = memoryOf(tree);
    postgres = { rssMb: Math.max(postgres.rssMb, pg.rssMb), pssMb: Math.max(postgres.pssMb, pg.pssMb) };
    totalMb = Math.max(totalMb, memoryOf([hooklinePid]).rssMb + pg.pssMb);
    samples++;
    spentMs += performance.now() - started;
  };
  sample();
  const timer = setInterval(sample, everyMs);
  parentPort!.once('message', () => {
    clearInterval(timer);
    listed = 0;
    sample();
    const cpu = process.threadCpuUsage(cpuAtStart);
    parentPort!.postMessage({
      postgres,
      totalMb,
      samples,
      meanSampleMs: spentMs / samples,
      meanSampleCpuMs: (cpu.user + cpu.system) / 1000 / samples,
    } satisfies EmbeddedPeaks);
  });
}

if (!isMainThread && parentPort) runSampler(workerData as Job);
