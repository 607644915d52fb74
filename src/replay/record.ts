import type { Clock } from '../clock.ts';
import { appendEvents } from '../commands/handle-command.ts';
import { type ReplayAttemptedData, replayStream } from '../domain/replay/events.ts';
import type { EventStore, Position } from '../eventstore/port.ts';
import type { ReplayClient, ReplayResult } from './client.ts';

export interface ReplayRecordDeps {
  readonly store: EventStore;
  readonly clock: Clock;
  readonly replay: Pick<ReplayClient, 'replay'>;
}

/** The stored delivery a replay sends: its id, its bytes and its content type. */
export interface ReplaySource {
  readonly id: number;
  readonly payload: Uint8Array;
  readonly content_type: string | null;
}

/** Who asked for the replay: the surface, the operator, human or endpoint slug, and the endpoint (MCP). */
export interface ReplayRequester {
  readonly via: ReplayAttemptedData['via'];
  readonly by: string;
  readonly endpointId?: string | null;
}

export interface RecordedReplay {
  readonly result: ReplayResult;
  readonly attempt: ReplayAttemptedData;
  /** The attempt's revision on the replay stream: 0 for the delivery's first replay. */
  readonly number: number;
  /** Where the attempt was appended: wait for it before reading the attempts back. */
  readonly position: Position;
}

const TEXT_MAX = 2048;

/** The target as the log keeps it: userinfo (refused by the guard anyway) never enters the log. */
export function targetForLog(target: string): string {
  const cut = target.length > TEXT_MAX ? `${target.slice(0, TEXT_MAX)}…` : target;
  try {
    const url = new URL(target);
    if (url.username || url.password) {
      url.username = url.username ? 'redacted' : '';
      url.password = '';
      return url.href.length > TEXT_MAX ? `${url.href.slice(0, TEXT_MAX)}…` : url.href;
    }
  } catch {
    // Not a URL: kept as given (the guard refused it as invalid_url).
  }
  return cut;
}

/**
 * The one path of a replay, whoever asks (operator API and CLI, the detail page, MCP): the bytes
 * through the SSRF guard (src/replay/client.ts, checked when called and when connecting), then the
 * attempt, whatever its outcome, appended to the delivery's replay stream `replays-<event id>`.
 * Callers decide beforehand who may replay which delivery.
 */
/** The attempt as the API answers it (ReplayAttempt of the OpenAPI document). */
export function attemptOut(recorded: RecordedReplay) {
  const { endpoint_id: _endpoint, ...attempt } = recorded.attempt;
  return {
    ...attempt,
    attempt: recorded.number,
    ...(recorded.result.kind === 'delivered' ? { response_snippet: recorded.result.responseSnippet } : {}),
  };
}

export async function replayAndRecord(
  deps: ReplayRecordDeps,
  source: ReplaySource,
  target: string,
  requester: ReplayRequester,
): Promise<RecordedReplay> {
  const started = performance.now();
  const result = await deps.replay.replay({
    target,
    body: source.payload,
    contentType: source.content_type,
    headers: { 'x-hookline-event-id': String(source.id) },
  });
  const latency = Math.max(0, Math.round(performance.now() - started));
  const attempt: ReplayAttemptedData = {
    event_id: source.id,
    target: targetForLog(target),
    outcome: result.kind,
    status: result.kind === 'delivered' ? result.status : null,
    location: result.kind === 'delivered' ? result.location : null,
    reason: result.kind === 'delivered' ? null : result.reason,
    phase: result.kind === 'refused' ? result.phase : null,
    detail: result.kind === 'delivered' ? null : result.detail.slice(0, TEXT_MAX),
    latency_ms: latency,
    via: requester.via,
    by: requester.by,
    endpoint_id: requester.endpointId ?? null,
    attempted_at: deps.clock.now().toISOString(),
  };
  const appended = await appendEvents(deps.store, replayStream(source.id), [
    { type: 'ReplayAttempted', data: attempt },
  ]);
  return { result, attempt, number: Number(appended.nextExpectedRevision), position: appended.position };
}
