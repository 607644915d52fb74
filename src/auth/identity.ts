import type { IncomingMessage } from 'node:http';
import ipaddr from 'ipaddr.js';
import type { Config } from '../config.ts';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

export type SignedIn =
  | { readonly ok: true; readonly human: string; readonly via: 'loopback' | 'proxy' }
  | { readonly ok: false; readonly reason: string };

const normalize = (a: Address): Address =>
  a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress() ? (a as ipaddr.IPv6).toIPv4Address() : a;

function parseRanges(entries: readonly string[]): [Address, number][] {
  return entries.flatMap((entry): [Address, number][] => {
    try {
      if (entry.includes('/')) {
        const [addr, bits] = ipaddr.parseCIDR(entry);
        const n = normalize(addr);
        return [[n, addr.kind() === 'ipv6' && n.kind() === 'ipv4' ? bits - 96 : bits]];
      }
      const n = normalize(ipaddr.parse(entry));
      return [[n, n.kind() === 'ipv4' ? 32 : 128]];
    } catch {
      return []; // config parsing reports bad entries; a bad one here trusts nothing
    }
  });
}

/** One line of 1-128 printable characters: a user name as a forward-auth proxy sends it. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
const USER = /^[^\u0000-\u001f\u007f]{1,128}$/;

/**
 * Who is signing in (spec 1.7, 5 rule 5). Behind a reverse proxy that performs forward
 * authentication, the user its header names, believed only when the TCP peer is one of
 * HOOKLINE_TRUSTED_PROXIES. Otherwise, on loopback only, the local operator HOOKLINE_OPERATOR.
 * A forward-auth header from any other peer is refused outright rather than ignored, so a
 * misconfigured proxy is noticed instead of signing everyone in as the operator.
 */
export function createIdentityResolver(config: Config): (req: IncomingMessage) => SignedIn {
  const trusted = parseRanges(config.trustedProxies);
  const header = config.authUserHeader;
  return (req) => {
    const raw = req.socket.remoteAddress;
    if (!raw || !ipaddr.isValid(raw)) return { ok: false, reason: 'the connection has no peer address' };
    const peer = normalize(ipaddr.parse(raw));
    const fromProxy = trusted.some(
      ([range, bits]) => range.kind() === peer.kind() && peer.match(range, bits),
    );
    const named = header ? req.headers[header] : undefined;
    if (fromProxy) {
      if (!header) {
        return {
          ok: false,
          reason: 'sign-in through a proxy needs HOOKLINE_AUTH_USER_HEADER, the header that names the user',
        };
      }
      const user = Array.isArray(named) ? undefined : named?.trim();
      if (!user || !USER.test(user)) {
        return { ok: false, reason: `the proxy did not name a user in the ${header} header` };
      }
      return { ok: true, human: user, via: 'proxy' };
    }
    if (named !== undefined) {
      return {
        ok: false,
        reason: `a ${header} header from ${peer.toString()}, which is not a trusted proxy`,
      };
    }
    if (peer.range() === 'loopback') return { ok: true, human: config.operator, via: 'loopback' };
    return {
      ok: false,
      reason: 'sign-in is open on loopback, or through a reverse proxy listed in HOOKLINE_TRUSTED_PROXIES',
    };
  };
}
