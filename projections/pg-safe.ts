/**
 * PostgreSQL refuses the NUL character in `text` ("invalid byte sequence for encoding UTF8: 0x00")
 * and in `jsonb` ("unsupported Unicode escape sequence"), though JSON, form bodies and JavaScript
 * strings allow it. A read model that wrote one as is would fail on that event and retry it for
 * ever, stalling every reader behind it; these helpers make a value storable first.
 */

const NUL = '\u0000';

/** A label for a text column (event type, reason, key): NUL becomes U+FFFD, the rest is unchanged. */
export function textSafe<T extends string | null | undefined>(value: T): T {
  return (typeof value === 'string' && value.includes(NUL) ? value.replaceAll(NUL, '\uFFFD') : value) as T;
}

/**
 * A JSON value for a jsonb column, faithfully: `jsonb` is its JSON text when that holds no NUL
 * (no string or key with one), else null and `text` is the JSON text, for a bytea column, that
 * jsonFromStored turns back into the same value.
 */
export function jsonbSafe(value: unknown): { jsonb: string; bytes: Buffer | null } {
  const text = JSON.stringify(value ?? null);
  // JSON.stringify writes NUL as the escape \u0000 (a literal backslash-u0000 in a string is
  // written \\u0000 and also matches: a harmless fallback that still round-trips).
  if (!text.includes('\\u0000')) return { jsonb: text, bytes: null };
  return { jsonb: 'null', bytes: Buffer.from(text, 'utf8') };
}

/** The value jsonbSafe stored: the bytea fallback when there is one, else the jsonb column. */
export function jsonFromStored(jsonb: unknown, bytes: Uint8Array | null | undefined): unknown {
  if (!bytes) return jsonb;
  return JSON.parse(new TextDecoder().decode(bytes));
}

/** Headers and other display-only JSON: every NUL in a string becomes U+FFFD. */
export function jsonbDisplaySafe(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' ? textSafe(v) : v));
}
