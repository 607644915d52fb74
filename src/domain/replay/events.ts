import { z } from 'zod';
import { defineEvent } from '../shared.ts';

/**
 * Every replay of a delivery, whoever asked (an operator over the API or the CLI, a human on the
 * detail page, an agent over MCP), is one event on the delivery's own replay stream. The attempt
 * is a fact, not a decision: appended with expected revision `any`, in the order attempts end.
 */
export const replayStream = (eventId: number): string => `replays-${eventId}`;

/** The event id a replay stream belongs to, or undefined for another stream. */
export function replayStreamEventId(streamId: string): number | undefined {
  const m = /^replays-([1-9][0-9]{0,17})$/.exec(streamId);
  return m ? Number(m[1]) : undefined;
}

export const REPLAY_OUTCOMES = ['delivered', 'refused', 'failed'] as const;
export type ReplayOutcome = (typeof REPLAY_OUTCOMES)[number];

/** Where the replay was asked for. */
export const REPLAY_VIA = ['api', 'ui', 'mcp'] as const;

export const ReplayAttempted = defineEvent(
  'ReplayAttempted',
  z.object({
    event_id: z.number().int().min(1),
    /** The target as given, with any userinfo replaced (the guard refuses it; the log never keeps it). */
    target: z.string(),
    /** delivered: the target answered (any status; a 3xx is reported, never followed). */
    outcome: z.enum(REPLAY_OUTCOMES),
    /** The target's HTTP status when delivered, else null. */
    status: z.number().int().nullable(),
    /** The Location of a 3xx answer (not followed). */
    location: z.string().nullable(),
    /** Refused: the guard's reason (scheme, userinfo, address, …); failed: timeout, tls or network. */
    reason: z.string().nullable(),
    /** Refused: whether the guard said no when called or when connecting. */
    phase: z.enum(['call', 'connect']).nullable(),
    detail: z.string().nullable(),
    latency_ms: z.number().int().min(0),
    via: z.enum(REPLAY_VIA),
    /** Who asked: the operator or the human (api, ui), the endpoint's slug (mcp). */
    by: z.string(),
    /** The endpoint that asked over MCP, else null. */
    endpoint_id: z.string().nullable(),
    attempted_at: z.string(),
  }),
);

export const replayEvents = [ReplayAttempted] as const;
export type ReplayEvent = z.infer<typeof ReplayAttempted>;
export type ReplayAttemptedData = ReplayEvent['data'];
