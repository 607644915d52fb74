import type { FollowUps } from '../follow-up.ts';
import type { DeliveryRecorder } from '../ingest/recorder.ts';
import type { Runtime } from '../runtime.ts';
import type { Drain } from '../todos/drain.ts';
import type { SecretBox } from '../webhooks/secret-box.ts';

/** What the tools reach (explicit, built once per process in src/mcp/index.ts). */
export interface McpServices {
  readonly runtime: Pick<
    Runtime,
    'config' | 'store' | 'clock' | 'db' | 'projections' | 'logger' | 'rules' | 'replay' // RULES (issue 7)
  >;
  readonly drain: Drain;
  readonly secretBox: SecretBox;
  /** create_for records its hand-off through the ingestion recorder, as an operator push does. */
  readonly recorder: Pick<DeliveryRecorder, 'record'>;
  readonly followUps: FollowUps;
}
