import { sql } from 'kysely';
import { copyRows } from '../db/copy.ts';
import type { SqlDatabase } from '../db/open.ts';
import type { ContentType, EventData, EventStore, RecordedEvent } from './port.ts';

/**
 * The whole event log as NDJSON, to move a store between modes (`hookline export` / `import`,
 * docs/reference/cli.md). The first line names the format; then one line per event in `$all`
 * order, with its stream, revision, id, type, content type, creation time (to the millisecond)
 * and its bytes (base64, so payloads that are not UTF-8 survive). Positions are the store's own
 * and are not exported: the importing store assigns new ones in the same order.
 */

export const EXPORT_FORMAT = 'hookline-event-log';
export const EXPORT_VERSION = 1;

export interface ExportLine {
  readonly stream_id: string;
  readonly revision: number;
  readonly event_id: string;
  readonly event_type: string;
  readonly content_type: ContentType;
  readonly created_at: string;
  readonly data: string;
  readonly metadata: string | null;
  /** The event's unique key (port.ts, EventData.uniqueKey): a delivery's dedup key. Absent when none. */
  readonly unique_key?: string;
}

export const headerLine = (): string =>
  `${JSON.stringify({ format: EXPORT_FORMAT, version: EXPORT_VERSION })}\n`;

export function eventLine(e: RecordedEvent): string {
  const line: ExportLine = {
    stream_id: e.streamId,
    revision: Number(e.revision),
    event_id: e.id,
    event_type: e.type,
    content_type: e.contentType,
    created_at: e.createdAt.toISOString(),
    data: Buffer.from(e.data).toString('base64'),
    metadata: e.metadata ? Buffer.from(e.metadata).toString('base64') : null,
    ...(e.uniqueKey ? { unique_key: e.uniqueKey } : {}),
  };
  return `${JSON.stringify(line)}\n`;
}

/** Writes the log; `write` may return a promise to apply back-pressure. Returns the event count. */
export async function exportLog(
  store: EventStore,
  write: (chunk: string) => void | Promise<void>,
  onEvent?: (count: number) => void,
): Promise<number> {
  await write(headerLine());
  let count = 0;
  for await (const e of store.readAll()) {
    await write(eventLine(e));
    count++;
    onEvent?.(count);
  }
  return count;
}

export class ImportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImportError';
  }
}

function parseLine(text: string, lineNo: number): ExportLine {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new ImportError(`line ${lineNo} is not JSON`);
  }
  const o = v as Record<string, unknown>;
  const ok =
    o &&
    typeof o === 'object' &&
    typeof o.stream_id === 'string' &&
    Number.isSafeInteger(o.revision) &&
    (o.revision as number) >= 0 &&
    typeof o.event_id === 'string' &&
    typeof o.event_type === 'string' &&
    (o.content_type === 'application/json' || o.content_type === 'application/octet-stream') &&
    typeof o.created_at === 'string' &&
    !Number.isNaN(Date.parse(o.created_at)) &&
    typeof o.data === 'string' &&
    (o.metadata === null || typeof o.metadata === 'string') &&
    (o.unique_key === undefined ||
      (typeof o.unique_key === 'string' && o.unique_key.length > 0 && !o.unique_key.includes('\u0000')));
  if (!ok) throw new ImportError(`line ${lineNo} is not an event of a hookline export`);
  return o as unknown as ExportLine;
}

/** Is there any event, or any stream, in the store? An import goes into an empty one only. */
async function isEmpty(store: EventStore, sqlDb: SqlDatabase | undefined): Promise<boolean> {
  if (sqlDb && store.kind === 'postgres') {
    const { rows } = await sql<{ any: boolean }>`
      select exists (select 1 from es_streams) or exists (select 1 from es_events) as any`.execute(sqlDb.db);
    return !rows[0]?.any;
  }
  for await (const _ of store.readAll({ maxCount: 1 })) return false;
  return true;
}

export interface ImportProgress {
  readonly events: number;
  /** Bytes of the input consumed so far (for a bar over a file's size). */
  readonly bytes: number;
}

/** Events written per transaction (or append), and at most this many bytes of payload. */
const BATCH_EVENTS = 1000;
const BATCH_BYTES = 8 * 1024 * 1024;

const EVENT_SPEC = {
  table: 'es_events',
  columns: [
    ['stream_id', 'text'],
    ['revision', 'int8'],
    ['event_id', 'uuid'],
    ['event_type', 'text'],
    ['content_type', 'text'],
    ['data', 'bytea'],
    ['metadata', 'bytea'],
    ['created_at', 'timestamptz'],
    ['unique_key', 'text'],
  ],
} as const;

/**
 * Reads an export into an empty store. On PostgreSQL (embedded and server mode) the rows are
 * written as they were: same streams, revisions, ids and creation times, in the same `$all` order
 * (one transaction per batch, COPY). On EventStoreDB the events are appended with their ids and
 * revisions checked; EventStoreDB sets its own creation times, and a stream that does not start
 * at revision 0 (truncated by retention) is refused there.
 */
export async function importLog(
  target: { readonly store: EventStore; readonly sql?: SqlDatabase },
  lines: AsyncIterable<string>,
  onProgress?: (p: ImportProgress) => void,
): Promise<number> {
  const { store } = target;
  const sqlDb = store.kind === 'postgres' ? target.sql : undefined;
  // Taken before the first await: a readline interface emits its lines whether or not anyone
  // iterates yet, and only an iterator that exists buffers them.
  const input = lines[Symbol.asyncIterator]();
  if (!(await isEmpty(store, sqlDb))) {
    await input.return?.();
    throw new ImportError('the target store is not empty: import into a store that holds no events');
  }
  const last = new Map<string, number>();
  let batch: ExportLine[] = [];
  let batchBytes = 0;
  let events = 0;
  let bytes = 0;
  let lineNo = 0;
  let sawHeader = false;

  const flush = async () => {
    if (batch.length === 0) return;
    if (sqlDb) await writeSqlBatch(sqlDb, batch);
    else await appendBatch(store, batch);
    events += batch.length;
    batch = [];
    batchBytes = 0;
    onProgress?.({ events, bytes });
  };

  try {
    for (let next = await input.next(); !next.done; next = await input.next()) {
      const raw = next.value;
      lineNo++;
      bytes += Buffer.byteLength(raw) + 1;
      const text = raw.trim();
      if (!text) continue;
      if (!sawHeader) {
        let header: { format?: unknown; version?: unknown } = {};
        try {
          header = JSON.parse(text) as typeof header;
        } catch {
          // refused below
        }
        if (header.format !== EXPORT_FORMAT) {
          throw new ImportError(`line 1 is not the header of a hookline export (${EXPORT_FORMAT})`);
        }
        if (header.version !== EXPORT_VERSION) {
          throw new ImportError(
            `the export is version ${String(header.version)}; this hookline reads version ${EXPORT_VERSION}`,
          );
        }
        sawHeader = true;
        continue;
      }
      const line = parseLine(text, lineNo);
      const before = last.get(line.stream_id);
      if (before !== undefined && line.revision !== before + 1) {
        throw new ImportError(
          `line ${lineNo}: stream ${line.stream_id} goes from revision ${before} to ${line.revision}`,
        );
      }
      last.set(line.stream_id, line.revision);
      batch.push(line);
      batchBytes += line.data.length + (line.metadata?.length ?? 0);
      if (batch.length >= BATCH_EVENTS || batchBytes >= BATCH_BYTES) await flush();
    }
  } catch (err) {
    await input.return?.();
    throw err;
  }
  if (!sawHeader) throw new ImportError('the input is empty: no hookline export header');
  await flush();
  return events;
}

async function writeSqlBatch(sqlDb: SqlDatabase, batch: readonly ExportLine[]): Promise<void> {
  // The first and last revision of each stream in this batch.
  const streams = new Map<string, { first: number; last: number }>();
  for (const e of batch) {
    const s = streams.get(e.stream_id);
    if (s) s.last = e.revision;
    else streams.set(e.stream_id, { first: e.revision, last: e.revision });
  }
  const ids = [...streams.keys()];
  const firsts = ids.map((id) => String(streams.get(id)!.first));
  const lasts = ids.map((id) => String(streams.get(id)!.last));
  await sqlDb.db.transaction().execute(async (trx) => {
    // A stream new to the store starts where its export starts (retention may have truncated it).
    await sql`
      insert into es_streams (stream_id, revision, truncate_before)
      select s, l, f from unnest(${ids}::text[], ${firsts}::bigint[], ${lasts}::bigint[]) as u(s, f, l)
      on conflict (stream_id) do update set revision = excluded.revision`.execute(trx);
    await copyRows(
      trx,
      EVENT_SPEC,
      batch.map((e) => [
        e.stream_id,
        BigInt(e.revision),
        e.event_id,
        e.event_type,
        e.content_type,
        Buffer.from(e.data, 'base64'),
        e.metadata === null ? null : Buffer.from(e.metadata, 'base64'),
        new Date(e.created_at),
        e.unique_key ?? null,
      ]),
    );
  });
}

async function appendBatch(store: EventStore, batch: readonly ExportLine[]): Promise<void> {
  // Consecutive events of one stream go in one append, in the order of the export.
  let i = 0;
  while (i < batch.length) {
    const first = batch[i]!;
    let j = i + 1;
    while (j < batch.length && batch[j]!.stream_id === first.stream_id) j++;
    if (first.revision > 0 && (await store.streamInfo(first.stream_id)).revision < 0n) {
      throw new ImportError(
        `stream ${first.stream_id} starts at revision ${first.revision} (truncated by retention); EventStoreDB cannot hold a stream that does not start at 0`,
      );
    }
    const events: EventData[] = batch.slice(i, j).map((e) => ({
      id: e.event_id,
      type: e.event_type,
      contentType: e.content_type,
      data: Buffer.from(e.data, 'base64'),
      ...(e.metadata === null ? {} : { metadata: Buffer.from(e.metadata, 'base64') }),
      // A store without unique keys (EventStoreDB) cannot take them: that dedup is lost there.
      ...(e.unique_key !== undefined && store.uniqueKeys ? { uniqueKey: e.unique_key } : {}),
    }));
    await store.append(first.stream_id, events, {
      expectedRevision: first.revision === 0 ? 'no_stream' : BigInt(first.revision - 1),
    });
    i = j;
  }
}
