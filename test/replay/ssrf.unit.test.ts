import { describe, expect, it } from 'vitest';
import { checkReplayTarget, classifyAddress, type ResolveHost } from '../../src/replay/ssrf.ts';

// The call-time half of the SSRF guard: URL parsing and address classification. The resolver is
// injected, so no DNS is involved; the connect-time half is in replay.int.test.ts.
const names: Record<string, string[]> = {
  'public.example': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
  'internal.example': ['10.1.2.3'],
  'mixed.example': ['93.184.216.34', '192.168.1.10'],
  'metadata.example': ['169.254.169.254'],
  'v6-local.example': ['fd12:3456::1'],
  'nothing.example': [],
};
const resolve: ResolveHost = async (hostname) => {
  const found = names[hostname];
  if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return found;
};

describe('classifyAddress', () => {
  const refused: [string, RegExp][] = [
    ['127.0.0.1', /loopback/],
    ['127.255.0.9', /loopback/],
    ['10.0.0.1', /private/],
    ['172.16.0.1', /private/],
    ['172.31.255.255', /private/],
    ['192.168.0.1', /private/],
    ['169.254.169.254', /cloud metadata/],
    ['169.254.1.1', /link-local/],
    ['100.64.0.1', /100\.64\.0\.0\/10/],
    ['100.127.255.255', /100\.64\.0\.0\/10/],
    ['0.0.0.0', /unspecified/],
    ['0.1.2.3', /unspecified/],
    ['224.0.0.1', /multicast/],
    ['255.255.255.255', /reserved/],
    ['192.0.2.1', /documentation/],
    ['198.18.0.1', /benchmarking/],
    ['::', /unspecified/],
    ['::1', /loopback/],
    ['::ffff:127.0.0.1', /IPv4-mapped/],
    ['::ffff:8.8.8.8', /IPv4-mapped/],
    ['::7f00:1', /IPv4-compatible/],
    ['64:ff9b::7f00:1', /NAT64/],
    ['64:ff9b:1::1', /NAT64/],
    ['2002:7f00:1::', /6to4/],
    ['2001::1', /Teredo/],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', /Teredo/],
    ['2001:db8::1', /documentation/],
    ['fc00::1', /unique-local/],
    ['fd00:ec2::254', /unique-local/],
    ['fe80::1', /link-local/],
    ['fec0::1', /site-local/],
    ['ff02::1', /multicast/],
    ['100::1', /discard/],
    ['4000::1', /reserved/],
  ];
  it.each(refused)('refuses %s', (ip, range) => {
    const verdict = classifyAddress(ip);
    expect(verdict.public).toBe(false);
    expect(!verdict.public && verdict.range).toMatch(range);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001::1',
  ])('allows the public address %s', (ip) => {
    expect(classifyAddress(ip)).toEqual({ public: true });
  });

  it('refuses what is not an address', () => {
    expect(classifyAddress('example.com')).toEqual({ public: false, range: 'not an IP address' });
  });
});

describe('checkReplayTarget (call time)', () => {
  // The matrix, as far as it needs no server; WHATWG parsing turns the odd IPv4 spellings
  // into 127.0.0.1 before the check sees them.
  const matrix: [string, string, RegExp][] = [
    ['https://127.1/', 'address', /127\.0\.0\.1 .*loopback/],
    ['https://0x7f000001/', 'address', /127\.0\.0\.1 .*loopback/],
    ['https://017700000001/', 'address', /127\.0\.0\.1 .*loopback/],
    ['https://127.000.000.001/', 'address', /loopback/],
    ['https://127.0.0.1./', 'address', /loopback/],
    ['https://[::ffff:127.0.0.1]/', 'address', /IPv4-mapped/],
    ['https://[::ffff:7f00:1]/', 'address', /IPv4-mapped/],
    ['https://0.0.0.0/', 'address', /unspecified/],
    ['https://[::]/', 'address', /unspecified/],
    ['https://[::1]:8443/x', 'address', /loopback/],
    ['https://169.254.169.254/latest/meta-data/', 'address', /cloud metadata/],
    ['https://100.64.0.1/', 'address', /100\.64\.0\.0\/10/],
    ['https://[64:ff9b::7f00:1]/', 'address', /NAT64/],
    ['https://[2002:7f00:1::]/', 'address', /6to4/],
    ['https://[2001::7f00:1]/', 'address', /Teredo/],
    ['https://[fe80::1]/', 'address', /link-local/],
    ['https://internal.example/hook', 'address', /internal\.example resolves to 10\.1\.2\.3 .*private/],
    ['https://mixed.example/', 'address', /192\.168\.1\.10 .*private/],
    ['https://metadata.example/', 'address', /cloud metadata/],
    ['https://v6-local.example/', 'address', /unique-local/],
    ['https://a.example@127.0.0.1/', 'userinfo', /user information .*127\.0\.0\.1/],
    ['https://user:pass@public.example/', 'userinfo', /user information/],
    ['http://public.example/', 'scheme', /only https/],
    ['ftp://public.example/', 'scheme', /only https/],
    ['https://localhost/', 'host', /loopback name/],
    ['https://api.localhost./', 'host', /loopback name/],
    ['https://nowhere.example/', 'resolution', /could not be resolved \(ENOTFOUND\)/],
    ['https://nothing.example/', 'resolution', /no addresses/],
    ['not a url', 'invalid_url', /not a valid absolute URL/],
  ];
  it.each(matrix)('refuses %s (%s)', async (target, reason, detail) => {
    const checked = await checkReplayTarget(target, { resolve });
    expect(checked).toMatchObject({ ok: false, reason });
    expect(!checked.ok && checked.detail).toMatch(detail);
  });

  it('accepts an https target whose every address is public', async () => {
    const checked = await checkReplayTarget('https://public.example:8443/hooks?x=1', { resolve });
    expect(checked).toMatchObject({
      ok: true,
      hostname: 'public.example',
      addresses: names['public.example'],
    });
    expect(checked.ok && checked.url.href).toBe('https://public.example:8443/hooks?x=1');
    expect(await checkReplayTarget('https://8.8.8.8/', { resolve })).toMatchObject({
      ok: true,
      addresses: ['8.8.8.8'],
    });
  });

  it('uses an injected classification (tests only)', async () => {
    const checked = await checkReplayTarget('https://127.0.0.2/', {
      classify: (ip) => (ip === '127.0.0.2' ? { public: true } : classifyAddress(ip)),
    });
    expect(checked.ok).toBe(true);
  });
});
