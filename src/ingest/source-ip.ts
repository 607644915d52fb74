import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
export type TrustedProxies = readonly [Address, number][];

/** Parses HOOKLINE_TRUSTED_PROXIES entries (addresses or CIDR ranges); an invalid entry throws naming it. */
export function parseTrustedProxies(entries: readonly string[]): TrustedProxies {
  return entries.map((entry): [Address, number] => {
    if (entry.includes('/')) {
      const [addr, bits] = ipaddr.parseCIDR(entry);
      return [
        normalize(addr),
        addr.kind() === 'ipv6' && normalize(addr).kind() === 'ipv4' ? bits - 96 : bits,
      ];
    }
    if (!ipaddr.isValid(entry))
      throw new Error(`HOOKLINE_TRUSTED_PROXIES: not an address or range: ${entry}`);
    const addr = normalize(ipaddr.parse(entry));
    return [addr, addr.kind() === 'ipv4' ? 32 : 128];
  });
}

/** `::ffff:10.0.0.1` and `10.0.0.1` are the same peer. */
function normalize(addr: Address): Address {
  return addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()
    ? (addr as ipaddr.IPv6).toIPv4Address()
    : addr;
}

function parseAddress(text: string): Address | undefined {
  let t = text.trim();
  // X-Forwarded-For may carry `[v6]:port` or `v4:port`.
  const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(t);
  if (bracket) t = bracket[1]!;
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(t)) t = t.slice(0, t.lastIndexOf(':'));
  if (!ipaddr.isValid(t)) return undefined;
  return normalize(ipaddr.parse(t));
}

function isTrusted(addr: Address, trusted: TrustedProxies): boolean {
  return trusted.some(([range, bits]) => range.kind() === addr.kind() && addr.match(range, bits));
}

/** Whether the TCP peer is one of the trusted proxies (whose forwarded headers are believed). */
export function isTrustedPeer(remoteAddress: string | undefined, trusted: TrustedProxies): boolean {
  const peer = remoteAddress ? parseAddress(remoteAddress) : undefined;
  return peer !== undefined && isTrusted(peer, trusted);
}

/**
 * TCP peers as parsed, by the socket's address text: a keep-alive sender comes from the same few
 * addresses every time, and parsing one with ipaddr.js cost about 6 µs a request. Bounded: cleared
 * when it holds more than a thousand.
 */
const peers = new Map<string, { readonly addr: Address; readonly text: string } | null>();

function peerOf(remoteAddress: string): { readonly addr: Address; readonly text: string } | null {
  let peer = peers.get(remoteAddress);
  if (peer === undefined) {
    const addr = parseAddress(remoteAddress);
    peer = addr ? { addr, text: addr.toString() } : null;
    if (peers.size >= 1000) peers.clear();
    peers.set(remoteAddress, peer);
  }
  return peer;
}

/**
 * The client's address. X-Forwarded-For is believed only when the peer is a trusted proxy, and
 * then only as far as the chain stays within trusted proxies: walking from the right, the first
 * address that is not a trusted proxy is the client (anything left of it could be forged).
 */
export function resolveSourceIp(
  remoteAddress: string | undefined,
  forwardedFor: string | string[] | undefined,
  trusted: TrustedProxies,
): string | null {
  const known = remoteAddress ? peerOf(remoteAddress) : null;
  if (!known) return remoteAddress ?? null;
  const peer = known.addr;
  if (trusted.length === 0 || forwardedFor === undefined || !isTrusted(peer, trusted)) return known.text;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
  let client: Address = peer;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = parseAddress(hops[i]!);
    if (!hop) break; // a garbled entry ends the trusted chain; keep the last good address
    client = hop;
    if (!isTrusted(hop, trusted)) break;
  }
  return client.toString();
}
