import { describe, expect, it } from 'vitest';
import { isSameOriginRequest } from '../../src/http/same-origin.ts';

const BASE = 'https://hooks.example.com';
const LOCAL = 'http://127.0.0.1:8080';

describe('the one same-origin policy of the form posts', () => {
  it('lets Sec-Fetch-Site decide when present, Origin: null included', () => {
    const cases: [Record<string, string>, boolean][] = [
      // What Chromium sends from a page served with Referrer-Policy: no-referrer (issue 15).
      [{ 'sec-fetch-site': 'same-origin', origin: 'null' }, true],
      [{ 'sec-fetch-site': 'same-origin', origin: BASE }, true],
      [{ 'sec-fetch-site': 'same-origin' }, true],
      [{ 'sec-fetch-site': 'same-origin', origin: 'null', accept: 'text/html' }, true],
      // A reload or a bookmark: the person's own action, with no Origin or our own.
      [{ 'sec-fetch-site': 'none' }, true],
      [{ 'sec-fetch-site': 'none', origin: BASE }, true],
      [{ 'sec-fetch-site': 'none', origin: 'http://localhost:8080', host: 'localhost:8080' }, true],
      // Origin: null is vouched for by Sec-Fetch-Site: same-origin alone (issue 15).
      [{ 'sec-fetch-site': 'none', origin: 'null' }, false],
      [{ 'sec-fetch-site': 'none', origin: 'null', host: '127.0.0.1:8080' }, false],
      [{ 'sec-fetch-site': 'none', origin: 'https://evil.example' }, false],
      [{ 'sec-fetch-site': 'same-site', origin: 'null' }, false],
      [{ 'sec-fetch-site': 'bogus', origin: BASE }, false],
      [{ 'sec-fetch-site': 'same-site', origin: BASE }, false],
      [{ 'sec-fetch-site': 'cross-site', origin: BASE }, false],
      [{ 'sec-fetch-site': 'cross-site', origin: 'null' }, false],
      [{ 'sec-fetch-site': 'cross-site', accept: 'application/json' }, false],
    ];
    for (const [headers, ok] of cases)
      expect(isSameOriginRequest(headers, BASE), JSON.stringify(headers)).toBe(ok);
  });

  it('without Sec-Fetch-Site, takes a real Origin that is the base URL’s or a loopback Host’s', () => {
    const cases: [Record<string, string>, boolean][] = [
      [{ origin: BASE, host: 'hooks.example.com' }, true],
      [{ origin: BASE, host: '10.0.0.5:8080' }, true],
      [{ origin: 'http://localhost:8080', host: 'localhost:8080' }, true],
      [{ origin: 'http://[::1]:8080', host: '[::1]:8080' }, true],
      [{ origin: 'http://rebound.example:8080', host: 'rebound.example:8080' }, false],
      [{ origin: 'http://hooks.example.com', host: 'hooks.example.com' }, false],
      [{ origin: 'http://localhost:3000', host: 'localhost:8080' }, false],
      // Origin: null says nothing of where the post came from without Sec-Fetch-Site beside it.
      [{ origin: 'null', host: '127.0.0.1:8080' }, false],
      [{ origin: 'null', host: 'hooks.example.com', accept: 'application/json' }, false],
    ];
    for (const [headers, ok] of cases)
      expect(isSameOriginRequest(headers, BASE), JSON.stringify(headers)).toBe(ok);
    expect(isSameOriginRequest({ origin: LOCAL, host: 'whatever' }, LOCAL)).toBe(true);
  });

  it('with neither header, passes a client that asks for JSON only (the CLI), never a form post', () => {
    expect(isSameOriginRequest({ accept: 'application/json' }, BASE)).toBe(true);
    for (const accept of [undefined, 'text/html', 'text/html,application/json', '*/*']) {
      const headers = accept === undefined ? {} : { accept };
      expect(isSameOriginRequest(headers, BASE), String(accept)).toBe(false);
    }
  });
});
