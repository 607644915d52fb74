import { createHmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { errorCatalog } from '../../src/errors.ts';
import { type SignedProvider, signatureSchemes } from '../../src/ingest/signatures/index.ts';
import type { VerifyResult } from '../../src/ingest/signatures/types.ts';

/**
 * Property tests on every signature-header parser (issue 3, point 8): whatever the headers — any
 * text, any bytes, repeated headers (an array value), a correct signature among junk — the answer
 * is 400 or 401, or a pass, and a pass only when the request carries a correct, fresh HMAC of the
 * body under one of the configured secrets.
 */

const NOW_MS = Date.parse('2025-06-01T12:00:00.000Z');
const NOW_S = Math.floor(NOW_MS / 1000);
const TOLERANCE_S = 300;

const SIGNATURE_HEADERS: Record<SignedProvider, readonly string[]> = {
  codehost: ['x-hub-signature-256'],
  payments: ['payments-signature', 'stripe-signature'],
  chat: ['x-chat-signature', 'x-slack-signature'],
};
const TIMESTAMP_HEADERS = ['x-chat-request-timestamp', 'x-slack-request-timestamp'];

const hmac = (secret: string, ...parts: (string | Uint8Array)[]) => {
  const mac = createHmac('sha256', secret);
  for (const p of parts) mac.update(p);
  return mac.digest('hex');
};

/** Stands for a correct value, made once the body, the secrets and the timestamp are drawn. */
const SIGNED = Symbol('signed');
type Part = string | typeof SIGNED;

/** What a correct sender would put in `header`, signing with `secret` at `ts`. */
function signedValue(header: string, ts: number, secret: string, body: Uint8Array): string {
  if (TIMESTAMP_HEADERS.includes(header)) return String(ts);
  if (SIGNATURE_HEADERS.codehost.includes(header)) return `sha256=${hmac(secret, body)}`;
  if (SIGNATURE_HEADERS.payments.includes(header)) return `t=${ts},v1=${hmac(secret, `${ts}.`, body)}`;
  return `v0=${hmac(secret, `v0:${ts}:`, body)}`;
}

const junk = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.constantFrom(
    '',
    ' ',
    'sha256=',
    'v0=',
    't=,v1=',
    't=1,v1=',
    `sha256=${'0'.repeat(64)}`,
    `v0=${'a'.repeat(64)}`,
  ),
  fc
    .array(fc.oneof(fc.constantFrom('t', 'v1', 'v0', ''), fc.string()), { maxLength: 40 })
    .map((parts) => parts.map((p, i) => (i % 2 ? `=${p}` : `${p},`)).join('')),
  fc
    .tuple(
      fc.integer({ min: -1e12, max: 1e15 }),
      fc.array(fc.stringMatching(/^[0-9a-fA-F]{0,70}$/), { maxLength: 20 }),
    )
    .map(([t, sigs]) => [`t=${t}`, ...sigs.map((s) => `v1=${s}`)].join(',')),
  fc.oneof(fc.integer(), fc.integer({ min: NOW_S - 400, max: NOW_S + 400 })).map(String),
);
const part = fc.oneof<fc.Arbitrary<Part>[]>(junk, fc.constant(SIGNED));
/** Sent once (a string) or repeated (node's string[]: an empty one, the signed one among others). */
const value = fc.oneof(part, fc.array(part, { maxLength: 4 }));

const drawnHeaders = fc.record(
  Object.fromEntries(
    [...Object.values(SIGNATURE_HEADERS).flat(), ...TIMESTAMP_HEADERS].map((name) => [name, value]),
  ),
  { requiredKeys: [] },
);
/** Any other headers, with any names and values, change nothing. */
const otherHeaders = fc.dictionary(
  fc.string({ minLength: 1 }).map((n) => n.toLowerCase()),
  fc.oneof(fc.string(), fc.array(fc.string(), { maxLength: 3 })),
  { maxKeys: 4 },
);

interface Draw {
  readonly headers: Partial<Record<string, Part | Part[]>>;
  readonly others: Record<string, string | string[]>;
  readonly body: Uint8Array;
  readonly secrets: string[];
  /** Which secret the signed parts use; one past the end is a secret not configured. */
  readonly signer: number;
  readonly ts: number;
}

const draws = fc.record({
  headers: drawnHeaders,
  others: otherHeaders,
  body: fc.uint8Array({ maxLength: 256 }),
  secrets: fc.array(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 3 }),
  signer: fc.nat({ max: 3 }),
  ts: fc.integer({ min: NOW_S - 2 * TOLERANCE_S, max: NOW_S + 2 * TOLERANCE_S }),
});

function materialize(d: Draw): IncomingHttpHeaders {
  const secret = d.secrets[d.signer] ?? 'a secret nobody configured';
  const one = (name: string, p: Part) => (p === SIGNED ? signedValue(name, d.ts, secret, d.body) : p);
  const headers: IncomingHttpHeaders = { ...d.others };
  for (const [name, v] of Object.entries(d.headers)) {
    if (v === undefined) continue;
    headers[name] = Array.isArray(v) ? v.map((p) => one(name, p)) : one(name, v);
  }
  return headers;
}

/** Every value of these headers, lower-cased, one per line. */
const textOf = (headers: IncomingHttpHeaders, names: readonly string[]) =>
  names
    .flatMap((n) => headers[n] ?? [])
    .join('\n')
    .toLowerCase();
/** Digit runs that could be a timestamp within the window, as the text that was signed. */
const freshTimestamps = (text: string) =>
  (text.match(/[0-9]+/g) ?? []).filter((t) => Math.abs(Number(t) - NOW_S) <= TOLERANCE_S);

/**
 * Independent of the parsers: the request carries a correct MAC of the body under a configured
 * secret (over a fresh timestamp where the scheme has one). A pass without this is a forgery.
 */
function carriesValidMac(provider: SignedProvider, headers: IncomingHttpHeaders, d: Draw): boolean {
  const signatures = textOf(headers, SIGNATURE_HEADERS[provider]);
  return d.secrets.some((secret) => {
    if (provider === 'codehost') return signatures.includes(hmac(secret, d.body));
    if (provider === 'payments')
      return freshTimestamps(signatures).some((t) => signatures.includes(hmac(secret, `${t}.`, d.body)));
    return freshTimestamps(textOf(headers, TIMESTAMP_HEADERS)).some((t) =>
      signatures.includes(hmac(secret, `v0:${t}:`, d.body)),
    );
  });
}

const status = (r: VerifyResult) => (r.ok ? 202 : errorCatalog[r.code].status);

describe('no header input yields anything but 400 or 401, or a pass on a genuine signature (fast-check)', () => {
  for (const provider of ['codehost', 'payments', 'chat'] as const) {
    it(`${provider}: any headers, repeated or not, are refused with 400 or 401 unless genuinely signed`, () => {
      const seen = { passed: 0, refused: 0 };
      fc.assert(
        fc.property(draws, (d) => {
          const headers = materialize(d);
          const r = signatureSchemes[provider].verify({
            headers,
            body: d.body,
            secrets: d.secrets,
            nowMs: NOW_MS,
            toleranceS: TOLERANCE_S,
          });
          if (r.ok) {
            seen.passed++;
            expect(carriesValidMac(provider, headers, d)).toBe(true);
          } else {
            seen.refused++;
            expect([400, 401]).toContain(status(r));
            // Only chat has a required header besides the signature (check 4 of design.md).
            if (provider !== 'chat') expect(status(r)).toBe(401);
          }
        }),
        { numRuns: 1000 },
      );
      // The draws reach both sides, or the property above says little.
      expect(seen.passed).toBeGreaterThan(0);
      expect(seen.refused).toBeGreaterThan(0);
    });
  }
});
