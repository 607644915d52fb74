import type { Observable, Subscription } from 'rxjs';
import { doorbellStream } from '../domain/endpoint/events.ts';
import { decodeEvent, type StoredEvent } from '../domain/events.ts';
import type { EventStore, RecordedEvent } from '../eventstore/port.ts';
import type { Logger } from '../logger.ts';
import { ALL_QUEUES_URI, queueUri } from './queues.ts';
import type { McpSession, SessionRegistry } from './sessions.ts';

/** The streams rings are appended to: `doorbell-<endpoint id>`. */
const DOORBELL_PREFIX = doorbellStream('');

/** Rings heard from one source and awaited from the other, at most this many (the oldest go). */
const RECENT_RINGS = 8192;

/**
 * The doorbell (docs/reference/mcp-tools.md): every `DoorbellRung` becomes
 * `notifications/resources/updated` for `hookline://queues/<queue>` on each session of that
 * endpoint in this process that subscribed to it (or to `hookline://queues`, every queue). Rings within one event-loop turn are
 * coalesced: one notification per session and queue.
 *
 * A ring comes from two places. This process's own appends ring the moment they commit (the
 * store's `onAppended`, where the store has it: issue 23, "a doorbell without a poll in its
 * path"), before the shared `$all` subscription has read them; every ring, this process's and
 * other processes' (a push through another instance, the expiry job elsewhere), also arrives on
 * that subscription. Each ring is told once: its event id is remembered from the first source
 * until the second brings it (or, bounded, until it is among the oldest RECENT_RINGS).
 */
export function startDoorbell(deps: {
  readonly doorbells$: Observable<RecordedEvent>;
  readonly store?: Pick<EventStore, 'onAppended'>;
  readonly sessions: SessionRegistry;
  readonly logger: Logger;
}): Subscription {
  const due = new Map<McpSession, Set<string>>();
  let scheduled = false;
  /** Event ids rung from one source, not yet seen from the other. */
  const once = new Set<string>();

  const flush = () => {
    scheduled = false;
    const batch = [...due];
    due.clear();
    for (const [session, uris] of batch) {
      for (const uri of uris) {
        session.server.sendResourceUpdated({ uri }).catch((err: unknown) => {
          deps.logger.debug({ err, session: session.id }, 'mcp: doorbell not delivered');
        });
      }
    }
  };

  const ring = (stored: StoredEvent & { readonly id: string }) => {
    if (once.delete(stored.id)) return; // the other source told of it already
    once.add(stored.id);
    if (once.size > RECENT_RINGS) once.delete(once.values().next().value!);
    let event: ReturnType<typeof decodeEvent>;
    try {
      event = decodeEvent(stored);
    } catch (err) {
      deps.logger.warn({ err }, 'mcp: a doorbell event could not be read');
      return;
    }
    if (event.type !== 'DoorbellRung') return;
    const ring = event.data;
    const uri = queueUri(ring.queue);
    for (const session of deps.sessions.forEndpoint(ring.endpoint_id)) {
      if (!session.subscriptions.has(uri) && !session.subscriptions.has(ALL_QUEUES_URI)) continue;
      let set = due.get(session);
      if (!set) {
        set = new Set();
        due.set(session, set);
      }
      set.add(uri);
    }
    if (due.size > 0 && !scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };

  const subscription = deps.doorbells$.subscribe(ring);
  const stopLocal = deps.store?.onAppended?.((streamId, events) => {
    if (!streamId.startsWith(DOORBELL_PREFIX)) return;
    for (const e of events) if (e.type === 'DoorbellRung') ring({ ...e, streamId });
  });
  if (stopLocal) subscription.add(stopLocal);
  return subscription;
}
