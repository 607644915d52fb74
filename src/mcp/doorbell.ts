import type { Observable, Subscription } from 'rxjs';
import { decodeEvent } from '../domain/events.ts';
import type { RecordedEvent } from '../eventstore/port.ts';
import type { Logger } from '../logger.ts';
import { ALL_QUEUES_URI, queueUri } from './queues.ts';
import type { McpSession, SessionRegistry } from './sessions.ts';

/**
 * The doorbell (docs/reference/mcp-tools.md): every `DoorbellRung` on the shared `$all` subscription
 * (a push, a webhook delivery, a release, an expired lease) becomes
 * `notifications/resources/updated` for `hookline://queues/<queue>` on each session of that
 * endpoint in this process that subscribed to it (or to `hookline://queues`, every queue). Rings within one event-loop turn are
 * coalesced: one notification per session and queue.
 */
export function startDoorbell(deps: {
  readonly doorbells$: Observable<RecordedEvent>;
  readonly sessions: SessionRegistry;
  readonly logger: Logger;
}): Subscription {
  const due = new Map<McpSession, Set<string>>();
  let scheduled = false;

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

  return deps.doorbells$.subscribe((e) => {
    let event: ReturnType<typeof decodeEvent>;
    try {
      event = decodeEvent(e);
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
  });
}
