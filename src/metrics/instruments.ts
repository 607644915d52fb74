import { Counter, Histogram, Registry } from 'prom-client';

/**
 * The process's own counters and histograms (prom-client), updated where the work happens; GET
 * /metrics (src/http/metrics.ts) prints them with the gauges it reads at scrape time. One registry
 * per process, not prom-client's global one, so nothing else can add to it by accident.
 */
export const processMetrics = new Registry();

export const deliveriesTotal = new Counter({
  name: 'hookline_deliveries_total',
  help: 'Requests to the webhook receivers and entries read by the broker consumers (provider broker:<channel>), by provider and outcome (accepted, rejected, invalid, too_large, rate_limited, unknown_provider, failed).',
  labelNames: ['provider', 'outcome'] as const,
  registers: [processMetrics],
});

export const ingestSeconds = new Histogram({
  name: 'hookline_ingest_duration_seconds',
  help: 'Time from a receiver request to its 2xx, the durable append included, by provider.',
  labelNames: ['provider'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [processMetrics],
});

export const appendBatchSize = new Histogram({
  name: 'hookline_append_batch_size',
  help: 'Appends committed together by one group commit of the SQL event store.',
  buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
  registers: [processMetrics],
});

const appendSecondsBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export const appendQueueSeconds = new Histogram({
  name: 'hookline_append_queue_seconds',
  help: 'Time an append of the SQL event store waited in the group commit queue before its batch was taken.',
  buckets: appendSecondsBuckets,
  registers: [processMetrics],
});

export const appendConnectSeconds = new Histogram({
  name: 'hookline_append_connect_seconds',
  help: 'Time a group commit batch waited for its database connection.',
  buckets: appendSecondsBuckets,
  registers: [processMetrics],
});

export const appendCommitSeconds = new Histogram({
  name: 'hookline_append_commit_seconds',
  help: 'Time of one group commit on its connection: the es_append_batch call and its commit.',
  buckets: appendSecondsBuckets,
  registers: [processMetrics],
});

export const ruleEvaluations = new Counter({
  name: 'hookline_rule_evaluations_total',
  help: 'Deliveries whose webhook rules ran in the sandbox, by outcome (routed, dropped, held, default, faulted).',
  labelNames: ['outcome'] as const,
  registers: [processMetrics],
});

export const ruleFaults = new Counter({
  name: 'hookline_rule_faults_total',
  help: 'Rule evaluations that faulted (compile error, throw, timeout, memory), by reason.',
  labelNames: ['reason'] as const,
  registers: [processMetrics],
});

export const replayOutcomes = new Counter({
  name: 'hookline_replays_total',
  help: 'Replays of a delivery to a target (MCP verb, CLI, detail page), by outcome (delivered, refused, failed).',
  labelNames: ['outcome'] as const,
  registers: [processMetrics],
});
