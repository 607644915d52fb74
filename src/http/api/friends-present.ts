import type { FriendRow } from '../../../projections/friends.table.ts';
import { FRIEND_GRANTABLE, grantableOf } from '../../domain/friend/grant.ts';
import { mcpJson, mcpUrl } from './present.ts';

/** A pending request past its expiry reads as expired before FriendExpired is recorded. */
export const friendStatusOf = (row: FriendRow, now: Date): FriendRow['status'] =>
  row.status === 'pending' && new Date(row.expires_at).getTime() <= now.getTime() ? 'expired' : row.status;

const iso = (d: Date | null): string | null => (d ? new Date(d).toISOString() : null);

/**
 * A friend edge as the operator API shows it (the issue "Friends"; spec 2.9 leaves its fields
 * open). Never a credential: only whether the requester may still collect it. Name, description
 * and message are untrusted text.
 */
export function friendOut(baseUrl: string, row: FriendRow, viewer: string, now: Date) {
  const status = friendStatusOf(row, now);
  return {
    id: row.id,
    state: status,
    direction: row.approver_operator === viewer ? ('incoming' as const) : ('outgoing' as const),
    via: row.via,
    approver: { endpoint_id: row.approver_endpoint_id, slug: row.approver_slug },
    requester: {
      name: row.requester_name,
      description: row.requester_description,
      card_url: row.requester_card_url,
      endpoint_id: row.requester_endpoint_id,
    },
    requested_verbs: row.requested_verbs,
    grantable_verbs: grantableOf(row.requested_verbs),
    queue: row.queue,
    message: row.message,
    granted_verbs: row.granted_verbs,
    friend_endpoint: row.friend_endpoint_id
      ? { id: row.friend_endpoint_id, slug: row.friend_slug, mcp_url: mcpUrl(baseUrl, row.friend_slug ?? '') }
      : null,
    approver_queue: row.approver_queue,
    credential:
      status === 'approved' && row.via === 'local'
        ? row.credential_collected
          ? 'collected'
          : 'available'
        : null,
    requested_at: iso(row.requested_at),
    expires_at: iso(row.expires_at),
    approved_at: iso(row.approved_at),
    ended_at: iso(row.ended_at),
    ended_by: row.ended_by,
    last_activity_at: iso(row.last_activity_at),
  };
}

/** The friend endpoint's credential, handed over once (API, screen, A2A artifact). */
export function friendCredentialOut(baseUrl: string, slug: string, token: string) {
  return { slug, mcp_url: mcpUrl(baseUrl, slug), token, mcp_json: mcpJson(baseUrl, slug, token) };
}

export { FRIEND_GRANTABLE };
