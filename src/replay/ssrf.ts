import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The SSRF guard (spec section 9, release 0.4.0 item 3): a replay target must be `https`, and
 * every address its host resolves to must be public. Shared by the call-time check here and the
 * connect-time check in dispatcher.ts.
 */

export type AddressVerdict = { readonly public: true } | { readonly public: false; readonly range: string };

/** Decides whether an IP address (v4 or v6 text, no brackets) may be dialed. */
export type ClassifyAddress = (ip: string) => AddressVerdict;

/** Resolves a host name to every address it has. */
export type ResolveHost = (hostname: string) => Promise<string[]>;

export type RefusalReason = 'invalid_url' | 'scheme' | 'userinfo' | 'host' | 'address' | 'resolution';

export type TargetCheck =
  | { readonly ok: true; readonly url: URL; readonly hostname: string; readonly addresses: readonly string[] }
  | { readonly ok: false; readonly reason: RefusalReason; readonly detail: string };

export interface GuardOptions {
  /** Test only: lets a test count its own server as public. */
  readonly classify?: ClassifyAddress;
  /** Test only: answers name lookups without DNS. */
  readonly resolve?: ResolveHost;
}

type Ranges = readonly (readonly [range: string, cidr: string])[];

// Checked in order, so the most specific name wins (metadata before link-local, and so on).
const V4_REFUSED: Ranges = [
  ['cloud metadata', '169.254.169.254/32'],
  ['cloud metadata', '169.254.170.2/32'],
  ['cloud metadata', '168.63.129.16/32'],
  ['cloud metadata', '100.100.100.200/32'],
  ['unspecified', '0.0.0.0/8'],
  ['loopback', '127.0.0.0/8'],
  ['private', '10.0.0.0/8'],
  ['private', '172.16.0.0/12'],
  ['private', '192.168.0.0/16'],
  ['link-local', '169.254.0.0/16'],
  ['shared address space (100.64.0.0/10)', '100.64.0.0/10'],
  ['IETF protocol assignment', '192.0.0.0/24'],
  ['documentation', '192.0.2.0/24'],
  ['documentation', '198.51.100.0/24'],
  ['documentation', '203.0.113.0/24'],
  ['6to4 relay anycast', '192.88.99.0/24'],
  ['benchmarking', '198.18.0.0/15'],
  ['multicast', '224.0.0.0/4'],
  ['reserved', '240.0.0.0/4'],
];

// IPv6 is allowed only inside global unicast (2000::/3), minus these; everything outside it is
// refused under the first matching name, else as reserved.
const V6_REFUSED: Ranges = [
  ['unspecified', '::/128'],
  ['loopback', '::1/128'],
  ['IPv4-mapped', '::ffff:0:0/96'],
  ['IPv4-translated', '::ffff:0:0:0/96'],
  ['IPv4-compatible', '::/96'],
  ['NAT64 (IPv4-embedded)', '64:ff9b::/96'],
  ['NAT64 local-use (IPv4-embedded)', '64:ff9b:1::/48'],
  ['6to4 (IPv4-embedded)', '2002::/16'],
  ['Teredo (IPv4-embedded)', '2001::/32'],
  ['documentation', '2001:db8::/32'],
  ['documentation', '3fff::/20'],
  ['IETF protocol assignment', '2001::/23'],
  ['discard-only', '100::/64'],
  ['unique-local', 'fc00::/7'],
  ['link-local', 'fe80::/10'],
  ['site-local', 'fec0::/10'],
  ['multicast', 'ff00::/8'],
];

const parsedV4 = V4_REFUSED.map(([range, cidr]) => [range, ipaddr.IPv4.parseCIDR(cidr)] as const);
const parsedV6 = V6_REFUSED.map(([range, cidr]) => [range, ipaddr.IPv6.parseCIDR(cidr)] as const);
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');

/** The production classification: public unicast only. */
export const classifyAddress: ClassifyAddress = (ip) => {
  const text = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  if (!ipaddr.isValid(text)) return { public: false, range: 'not an IP address' };
  const addr = ipaddr.parse(text);
  if (addr.kind() === 'ipv4') {
    const v4 = addr as ipaddr.IPv4;
    for (const [range, cidr] of parsedV4) if (v4.match(cidr)) return { public: false, range };
    return { public: true };
  }
  const v6 = addr as ipaddr.IPv6;
  for (const [range, cidr] of parsedV6) if (v6.match(cidr)) return { public: false, range };
  return v6.match(GLOBAL_UNICAST) ? { public: true } : { public: false, range: 'reserved' };
};

export const resolveHost: ResolveHost = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

/** A URL's host without IPv6 brackets. */
export const bareHostname = (url: URL): string =>
  url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;

export const describeRefusal = (ip: string, verdict: AddressVerdict): string =>
  verdict.public ? `${ip} is public` : `${ip} is not a public address (${verdict.range})`;

/**
 * The call-time check: parse (WHATWG, so `127.1`, `0x7f000001` and `017700000001` are already
 * 127.0.0.1 here), scheme, no userinfo, then every address of the host. The connect-time check
 * (dispatcher.ts) runs again on the addresses actually dialed.
 */
export async function checkReplayTarget(raw: string, options: GuardOptions = {}): Promise<TargetCheck> {
  const classify = options.classify ?? classifyAddress;
  const resolve = options.resolve ?? resolveHost;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'invalid_url', detail: 'the target is not a valid absolute URL' };
  }
  if (url.protocol !== 'https:') {
    return {
      ok: false,
      reason: 'scheme',
      detail: `only https targets are allowed, not ${url.protocol.slice(0, -1)}`,
    };
  }
  if (url.username !== '' || url.password !== '') {
    return {
      ok: false,
      reason: 'userinfo',
      detail: `a target may not carry user information (the host is ${url.hostname})`,
    };
  }
  const hostname = bareHostname(url);
  if (isIP(hostname) !== 0) {
    const verdict = classify(hostname);
    if (!verdict.public) return { ok: false, reason: 'address', detail: describeRefusal(hostname, verdict) };
    return { ok: true, url, hostname, addresses: [hostname] };
  }
  const name = hostname.replace(/\.$/, '').toLowerCase();
  if (name === 'localhost' || name.endsWith('.localhost')) {
    return { ok: false, reason: 'host', detail: `${hostname} is a loopback name` };
  }
  let addresses: string[];
  try {
    addresses = await resolve(hostname);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'lookup failed';
    return { ok: false, reason: 'resolution', detail: `${hostname} could not be resolved (${code})` };
  }
  if (addresses.length === 0)
    return { ok: false, reason: 'resolution', detail: `${hostname} has no addresses` };
  for (const address of addresses) {
    const verdict = classify(address);
    if (!verdict.public) {
      return {
        ok: false,
        reason: 'address',
        detail: `${hostname} resolves to ${describeRefusal(address, verdict)}`,
      };
    }
  }
  return { ok: true, url, hostname, addresses };
}
