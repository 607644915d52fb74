import type { FaultReason, RuleRef } from '../../rules-sandbox/index.ts';

/**
 * What became of a delivery on a webhook with rules (design.md: dispositions are events of their
 * own). One `DeliveryDisposed` per delivery, on the stream `dispositions-<webhook id>` rather than
 * on `webhook-<id>`, so that loading the webhook to decide on its rules never folds its traffic.
 *
 * - `routed`: a todo on `queue` (a rule's route, or the default when every rule continued);
 * - `dropped`: a rule dropped it; no todo;
 * - `held`: a rule's quarantine action; a todo in `quarantine`;
 * - `faulted`: evaluation failed (`reason`); a todo in `quarantine`, nothing anywhere else.
 */
export type Disposition = 'routed' | 'dropped' | 'held' | 'faulted';

export const DISPOSITIONS: readonly Disposition[] = ['routed', 'dropped', 'held', 'faulted'];

/** A fault reason: the sandbox's, or `scope` (a rule routed to a queue its owner does not drain). */
export type DispositionReason = FaultReason | 'scope';

export const DELIVERY_DISPOSED = 'DeliveryDisposed';

export interface DeliveryDisposedData {
  readonly event_id: number;
  readonly webhook_id: string;
  readonly endpoint_id: string;
  readonly operator: string;
  readonly disposition: Disposition;
  /** The queue its todo went to (`quarantine` for held and faulted), null when dropped. */
  readonly queue: string | null;
  readonly todo_id: string | null;
  /** The rule that decided or faulted; null for the default, or a fault no rule is to blame for. */
  readonly rule: RuleRef | null;
  readonly reason: DispositionReason | null;
  readonly message: string | null;
  readonly rules_version: number;
  readonly disposed_at: string;
}

export const dispositionStream = (webhookId: string): string => `dispositions-${webhookId}`;
