import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { createIdentityResolver } from '../../src/auth/identity.ts';
import { loadConfig } from '../../src/config.ts';

const request = (remoteAddress: string, headers: Record<string, string> = {}) =>
  ({ socket: { remoteAddress }, headers }) as unknown as IncomingMessage;

describe('who signs in', () => {
  const local = createIdentityResolver(loadConfig({ HOOKLINE_OPERATOR: 'ops' }));
  const proxied = createIdentityResolver(
    loadConfig({ HOOKLINE_TRUSTED_PROXIES: '10.0.0.0/8,::1', HOOKLINE_AUTH_USER_HEADER: 'X-Auth-User' }),
  );

  it('on loopback, the local operator', () => {
    expect(local(request('127.0.0.1'))).toEqual({ ok: true, human: 'ops', via: 'loopback' });
    expect(local(request('::1'))).toEqual({ ok: true, human: 'ops', via: 'loopback' });
    expect(local(request('::ffff:127.0.0.1'))).toEqual({ ok: true, human: 'ops', via: 'loopback' });
  });

  it('from anywhere else without a trusted proxy, nobody', () => {
    expect(local(request('192.0.2.7')).ok).toBe(false);
    expect(local(request('10.1.2.3')).ok).toBe(false);
  });

  it('through a trusted proxy, the user its header names', () => {
    expect(proxied(request('10.1.2.3', { 'x-auth-user': 'alice' }))).toEqual({
      ok: true,
      human: 'alice',
      via: 'proxy',
    });
    expect(proxied(request('::1', { 'x-auth-user': 'bob@example.com' }))).toMatchObject({
      human: 'bob@example.com',
    });
  });

  it('through a trusted proxy that names nobody, or something not a name, nobody', () => {
    expect(proxied(request('10.1.2.3')).ok).toBe(false);
    expect(proxied(request('10.1.2.3', { 'x-auth-user': '' })).ok).toBe(false);
    expect(proxied(request('10.1.2.3', { 'x-auth-user': 'a\u0007b' })).ok).toBe(false);
  });

  it('a forward-auth header from a peer that is not a trusted proxy is refused, even on loopback', () => {
    expect(proxied(request('192.0.2.7', { 'x-auth-user': 'alice' })).ok).toBe(false);
    expect(proxied(request('127.0.0.1', { 'x-auth-user': 'alice' })).ok).toBe(false);
    // Without the header, loopback is still the local operator.
    expect(proxied(request('127.0.0.1'))).toMatchObject({ ok: true, human: 'admin', via: 'loopback' });
  });

  it('a trusted proxy without the header configured signs nobody in', () => {
    const noHeader = createIdentityResolver(loadConfig({ HOOKLINE_TRUSTED_PROXIES: '127.0.0.1' }));
    const result = noHeader(request('127.0.0.1'));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(/HOOKLINE_AUTH_USER_HEADER/);
  });
});
