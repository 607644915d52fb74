import ipaddr from 'ipaddr.js';
import { HooklineError } from '../../errors.ts';

/**
 * Vend-time check of a replay target (release 0.4.0 item 3): `https` only, no credentials in the
 * URL, and a host that is not a literal loopback, private, link-local or otherwise non-public
 * address. TODO(lead): call the shared SSRF guard (src/replay/ssrf.ts, which also resolves the
 * host and checks every address) here once it lands; until then names are not resolved at vend
 * time and the guard at replay time is the one that checks them.
 */
export async function checkReplayTargetSyntax(raw: string): Promise<void> {
  const refuse = (why: string) =>
    new HooklineError('bad_request', `replay target ${JSON.stringify(raw)} refused: ${why}`, {
      field: 'replay_targets',
    });
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse('not an absolute URL');
  }
  if (url.protocol !== 'https:') throw refuse('the scheme must be https');
  if (url.username || url.password) throw refuse('credentials in the URL are not allowed');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host.endsWith('.localhost')) throw refuse('loopback host');
  if (ipaddr.isValid(host)) {
    let addr = ipaddr.parse(host);
    if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) {
      addr = (addr as ipaddr.IPv6).toIPv4Address();
    }
    if (addr.range() !== 'unicast') throw refuse(`${addr.range()} address`);
  }
}
