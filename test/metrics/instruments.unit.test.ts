import { register as globalRegistry } from 'prom-client';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  appendBatchSize,
  appendCommitSeconds,
  appendConnectSeconds,
  appendQueueSeconds,
  deliveriesTotal,
  ingestSeconds,
  processMetrics,
  replayOutcomes,
  ruleEvaluations,
  ruleFaults,
} from '../../src/metrics/instruments.ts';

const APPEND_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** A metric's values read back through the registry, keyed `metricName{label=value,…}`. */
async function valuesOf(name: string): Promise<Map<string, number>> {
  const metric = processMetrics.getSingleMetric(name);
  if (!metric) throw new Error(`${name} is not on the process registry`);
  const out = new Map<string, number>();
  for (const v of (await metric.get()).values) {
    const labels = Object.entries(v.labels)
      .map(([k, l]) => `${k}=${l}`)
      .join(',');
    out.set(`${'metricName' in v ? v.metricName : name}{${labels}}`, v.value);
  }
  return out;
}

/** The cumulative bucket counts of an unlabelled histogram, as [upper bound, count] in order. */
async function buckets(name: string): Promise<[string, number][]> {
  const out: [string, number][] = [];
  for (const [key, value] of await valuesOf(name)) {
    const le = new RegExp(`^${name}_bucket\\{le=([^,}]+)\\}$`).exec(key)?.[1];
    if (le !== undefined) out.push([le, value]);
  }
  return out;
}

describe('the process metrics (prom-client)', () => {
  beforeEach(() => processMetrics.resetMetrics());

  it('are on a registry of their own, never prom-client’s global one', async () => {
    const names = (await processMetrics.getMetricsAsJSON()).map((m) => m.name);
    expect(names.sort()).toEqual(
      [
        'hookline_append_batch_size',
        'hookline_append_commit_seconds',
        'hookline_append_connect_seconds',
        'hookline_append_queue_seconds',
        'hookline_deliveries_total',
        'hookline_ingest_duration_seconds',
        'hookline_replays_total',
        'hookline_rule_evaluations_total',
        'hookline_rule_faults_total',
      ].sort(),
    );
    for (const name of names) expect(globalRegistry.getSingleMetric(name)).toBeUndefined();
  });

  it('hookline_deliveries_total counts by provider and outcome', async () => {
    deliveriesTotal.inc({ provider: 'codehost', outcome: 'accepted' });
    deliveriesTotal.inc({ provider: 'codehost', outcome: 'accepted' });
    deliveriesTotal.inc({ provider: 'broker:orders', outcome: 'too_large' });
    const values = await valuesOf('hookline_deliveries_total');
    expect(values).toEqual(
      new Map([
        ['hookline_deliveries_total{provider=codehost,outcome=accepted}', 2],
        ['hookline_deliveries_total{provider=broker:orders,outcome=too_large}', 1],
      ]),
    );
    const text = await processMetrics.metrics();
    expect(text).toContain('# TYPE hookline_deliveries_total counter');
    expect(text).toContain('hookline_deliveries_total{provider="codehost",outcome="accepted"} 2');
    // A label it does not declare is refused, so a typo never makes a series of its own.
    const withQueue = { provider: 'codehost', outcome: 'accepted', queue: 'x' };
    expect(() => deliveriesTotal.inc(withQueue)).toThrow(/queue/);
  });

  it('hookline_ingest_duration_seconds: one observation per provider, in its buckets, with sum and count', async () => {
    ingestSeconds.observe({ provider: 'codehost' }, 0.003);
    ingestSeconds.observe({ provider: 'codehost' }, 0.2);
    ingestSeconds.observe({ provider: 'generic:ci' }, 20);
    const values = await valuesOf('hookline_ingest_duration_seconds');
    expect(values.get('hookline_ingest_duration_seconds_bucket{le=0.0025,provider=codehost}')).toBe(0);
    expect(values.get('hookline_ingest_duration_seconds_bucket{le=0.005,provider=codehost}')).toBe(1);
    expect(values.get('hookline_ingest_duration_seconds_bucket{le=0.25,provider=codehost}')).toBe(2);
    expect(values.get('hookline_ingest_duration_seconds_bucket{le=+Inf,provider=codehost}')).toBe(2);
    expect(values.get('hookline_ingest_duration_seconds_sum{provider=codehost}')).toBeCloseTo(0.203);
    expect(values.get('hookline_ingest_duration_seconds_count{provider=codehost}')).toBe(2);
    // 20 s is past the last bucket (10 s): only +Inf holds it.
    expect(values.get('hookline_ingest_duration_seconds_bucket{le=10,provider=generic:ci}')).toBe(0);
    expect(values.get('hookline_ingest_duration_seconds_bucket{le=+Inf,provider=generic:ci}')).toBe(1);
    const les = [...values.keys()]
      .filter(
        (k) => k.startsWith('hookline_ingest_duration_seconds_bucket{') && k.endsWith('provider=codehost}'),
      )
      .map((k) => /le=([^,]+)/.exec(k)![1]);
    expect(les).toEqual([
      '0.001',
      '0.0025',
      '0.005',
      '0.01',
      '0.025',
      '0.05',
      '0.1',
      '0.25',
      '0.5',
      '1',
      '2.5',
      '5',
      '10',
      '+Inf',
    ]);
  });

  it('hookline_append_batch_size: appends per group commit, in powers of two', async () => {
    appendBatchSize.observe(1);
    appendBatchSize.observe(3);
    appendBatchSize.observe(600);
    expect(await buckets('hookline_append_batch_size')).toEqual([
      ['1', 1],
      ['2', 1],
      ['4', 2],
      ['8', 2],
      ['16', 2],
      ['32', 2],
      ['64', 2],
      ['128', 2],
      ['256', 2],
      ['512', 2],
      ['+Inf', 3],
    ]);
    const values = await valuesOf('hookline_append_batch_size');
    expect(values.get('hookline_append_batch_size_sum{}')).toBe(604);
    expect(values.get('hookline_append_batch_size_count{}')).toBe(3);
  });

  for (const [name, histogram] of [
    ['hookline_append_queue_seconds', appendQueueSeconds],
    ['hookline_append_connect_seconds', appendConnectSeconds],
    ['hookline_append_commit_seconds', appendCommitSeconds],
  ] as const) {
    it(`${name}: seconds from half a millisecond to 2.5 s`, async () => {
      histogram.observe(0.0004);
      histogram.observe(0.004);
      histogram.observe(3);
      // 0.4 ms in every bucket, 4 ms from 5 ms up, 3 s only in +Inf.
      const counts = APPEND_BUCKETS.map((le): [string, number] => [String(le), le < 0.005 ? 1 : 2]);
      expect(await buckets(name)).toEqual([...counts, ['+Inf', 3]]);
      expect((await valuesOf(name)).get(`${name}_count{}`)).toBe(3);
    });
  }

  it('hookline_rule_evaluations_total and hookline_rule_faults_total count by outcome and by reason', async () => {
    ruleEvaluations.inc({ outcome: 'routed' });
    ruleEvaluations.inc({ outcome: 'faulted' });
    ruleFaults.inc({ reason: 'timeout' });
    ruleEvaluations.inc({ outcome: 'routed' });
    expect(await valuesOf('hookline_rule_evaluations_total')).toEqual(
      new Map([
        ['hookline_rule_evaluations_total{outcome=routed}', 2],
        ['hookline_rule_evaluations_total{outcome=faulted}', 1],
      ]),
    );
    expect(await valuesOf('hookline_rule_faults_total')).toEqual(
      new Map([['hookline_rule_faults_total{reason=timeout}', 1]]),
    );
  });

  it('hookline_replays_total counts by outcome', async () => {
    replayOutcomes.inc({ outcome: 'delivered' });
    replayOutcomes.inc({ outcome: 'refused' });
    replayOutcomes.inc({ outcome: 'refused' });
    expect(await valuesOf('hookline_replays_total')).toEqual(
      new Map([
        ['hookline_replays_total{outcome=delivered}', 1],
        ['hookline_replays_total{outcome=refused}', 2],
      ]),
    );
    expect(await processMetrics.metrics()).toContain('hookline_replays_total{outcome="refused"} 2');
  });

  it('each has help text in the exposition', async () => {
    const text = await processMetrics.metrics();
    for (const { name } of await processMetrics.getMetricsAsJSON()) {
      expect(text).toMatch(new RegExp(`^# HELP ${name} \\S.+$`, 'm'));
    }
  });
});
