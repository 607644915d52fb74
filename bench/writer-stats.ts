/**
 * The group commit's own figures, from the histograms of src/metrics/instruments.ts as GET /metrics
 * prints them (or processMetrics in the same process): how many appends a batch committed, how long
 * an append waited in the queue, how long a batch waited for its connection and how long its call
 * took. Two scrapes, before and after a run, give the run's share. Percentiles are the upper bound
 * of the histogram bucket that holds them (the buckets are coarse: 0.5, 1, 2.5, 5, 10, 25, 50, 100 ms…).
 */

interface Histogram {
  readonly count: number;
  readonly sum: number;
  /** Cumulative counts by upper bound (seconds, or appends for the batch size), +Inf last. */
  readonly buckets: ReadonlyArray<readonly [number, number]>;
}

function parse(text: string, name: string): Histogram {
  const buckets: Array<[number, number]> = [];
  let count = 0;
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}_bucket{`)) {
      const le = /le="([^"]+)"/.exec(line)?.[1] ?? '+Inf';
      buckets.push([le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le), Number(line.split(' ').pop())]);
    } else if (line.startsWith(`${name}_count`)) count = Number(line.split(' ').pop());
    else if (line.startsWith(`${name}_sum`)) sum = Number(line.split(' ').pop());
  }
  return { count, sum, buckets };
}

function minus(a: Histogram, b: Histogram): Histogram {
  return {
    count: a.count - b.count,
    sum: a.sum - b.sum,
    buckets: a.buckets.map(([le, n], i) => [le, n - (b.buckets[i]?.[1] ?? 0)] as const),
  };
}

function quantile(h: Histogram, q: number): number {
  const wanted = h.count * q;
  for (const [le, n] of h.buckets) if (n >= wanted) return le;
  return Number.NaN;
}

export interface WriterStats {
  /** Group commits (batches) in the run. */
  readonly batches: number;
  /** Appends (an atomic append counts once) per batch, mean. */
  readonly appendsPerBatch: number;
  readonly queueMeanMs: number;
  readonly queueP99Ms: number;
  readonly connectMeanMs: number;
  readonly connectP99Ms: number;
  readonly commitMeanMs: number;
  readonly commitP99Ms: number;
}

/** The run's figures: `after` minus `before`, both the text of GET /metrics. */
export function writerStats(before: string, after: string): WriterStats {
  const h = (name: string) => minus(parse(after, name), parse(before, name));
  const size = h('hookline_append_batch_size');
  const queue = h('hookline_append_queue_seconds');
  const connect = h('hookline_append_connect_seconds');
  const commit = h('hookline_append_commit_seconds');
  const ms = (x: number) => x * 1000;
  return {
    batches: size.count,
    appendsPerBatch: size.count > 0 ? size.sum / size.count : Number.NaN,
    queueMeanMs: ms(queue.sum / queue.count),
    queueP99Ms: ms(quantile(queue, 0.99)),
    connectMeanMs: ms(connect.sum / connect.count),
    connectP99Ms: ms(quantile(connect, 0.99)),
    commitMeanMs: ms(commit.sum / commit.count),
    commitP99Ms: ms(quantile(commit, 0.99)),
  };
}

/** A bound past the last finite bucket is +Inf (null once sent over IPC as JSON). */
const bound = (ms: number | null): string =>
  ms === null || !Number.isFinite(ms) ? 'over 2,500 ms' : `<= ${ms} ms`;

export const formatWriterStats = (s: WriterStats): string =>
  `group commit: ${s.batches} batches, ${s.appendsPerBatch.toFixed(1)} appends a batch; ` +
  `queue mean ${s.queueMeanMs.toFixed(1)} ms (p99 ${bound(s.queueP99Ms)}), ` +
  `connection wait mean ${s.connectMeanMs.toFixed(2)} ms (p99 ${bound(s.connectP99Ms)}), ` +
  `call mean ${s.commitMeanMs.toFixed(1)} ms (p99 ${bound(s.commitP99Ms)})`;

/** GET /metrics of a server on loopback (served to a loopback peer). */
export async function scrapeMetrics(baseUrl: string): Promise<string> {
  const res = await fetch(`${baseUrl}/metrics`);
  if (!res.ok) throw new Error(`GET /metrics answered ${res.status}`);
  return res.text();
}
