import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * DNS-rebinding guard for /mcp/* (MCP transport security): the Host header must name this
 * server, as configured (`HOOKLINE_BASE_URL`) or as the address the connection actually arrived
 * on; an Origin, when a browser sends one, must be one of those origins. A page on another site
 * whose name was rebound to our address sends its own name in Host and is refused.
 */
export function createRebindingGuard(baseUrl: string) {
  const base = new URL(baseUrl);
  const baseHost = base.host.toLowerCase();
  const baseOrigin = base.origin.toLowerCase();

  const hostsFor = (localAddress: string | undefined, localPort: number | undefined): Set<string> => {
    const hosts = new Set([baseHost]);
    if (localAddress && localPort) {
      const addr = localAddress.startsWith('::ffff:') ? localAddress.slice(7) : localAddress;
      hosts.add(isIP(addr) === 6 ? `[${addr}]:${localPort}` : `${addr}:${localPort}`);
      if (isIP(addr) && ipaddr.parse(addr).range() === 'loopback') {
        for (const h of ['localhost', '127.0.0.1', '[::1]']) hosts.add(`${h}:${localPort}`);
      }
    }
    return hosts;
  };

  return function check(request: {
    readonly host: string | undefined;
    readonly origin: string | undefined;
    readonly localAddress: string | undefined;
    readonly localPort: number | undefined;
  }): string | undefined {
    const hosts = hostsFor(request.localAddress, request.localPort);
    const host = request.host?.toLowerCase();
    if (!host || !hosts.has(host)) return `Host ${JSON.stringify(request.host ?? '')} is not this server`;
    if (request.origin !== undefined) {
      const origin = request.origin.toLowerCase();
      const allowed =
        origin === baseOrigin ||
        [...hosts].some((h) => origin === `http://${h}` || origin === `https://${h}`);
      if (!allowed) return `Origin ${JSON.stringify(request.origin)} is not allowed`;
    }
    return undefined;
  };
}
