import { findDeliveryByUuid } from '../../projections/log.queries.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { DB } from '../db/database.ts';
import type { EventStore } from '../eventstore/port.ts';
import { createProviderDirectory, type ProviderDirectory } from '../providers/directory.ts';
import { createReceiver, type Receiver } from './receive.ts';
import { createDeliveryRecorder, type DeliveryRecorder, type RecorderDeps } from './recorder.ts';

export interface Ingestion {
  /** Provider state from each provider's stream; share it so a toggle is seen at once. */
  readonly directory: ProviderDirectory;
  /** The one way a delivery enters the log, for every path (HTTP, broker, per-webhook, hand-off). */
  readonly recorder: DeliveryRecorder;
  readonly receiver: Receiver;
}

export interface IngestionDeps {
  readonly store: EventStore;
  readonly config: Config;
  readonly clock: Clock;
  /** The read-model database: duplicates find their original in `log_events` first. */
  readonly db?: DB;
  readonly recorder?: Pick<RecorderDeps, 'graceMs' | 'duplicateWaitMs' | 'tailSearch'>;
  readonly providerCacheMs?: number;
}

/** Builds the ingestion parts once per process (app.ts); the same instances serve every surface. */
export function createIngestion(deps: IngestionDeps): Ingestion {
  const { store, config, clock, db } = deps;
  const directory = createProviderDirectory({
    store,
    config,
    clock,
    ...(deps.providerCacheMs === undefined ? {} : { ttlMs: deps.providerCacheMs }),
  });
  const recorder = createDeliveryRecorder({
    store,
    clock,
    ...(db ? { findInReadModel: (uuid: string) => findDeliveryByUuid(db, uuid) } : {}),
    ...deps.recorder,
  });
  return { directory, recorder, receiver: createReceiver({ config, clock, recorder }) };
}
