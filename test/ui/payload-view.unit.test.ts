import { describe, expect, it } from 'vitest';
import { formFields, jsonTokens, prettyJson, rawSegments } from '../../src/http/ui/payload-view.ts';
import { formatBytes, formatDateTime } from '../../src/http/ui/views.ts';

const bytes = (...b: number[]) => new Uint8Array(b);
const utf8 = (s: string) => new TextEncoder().encode(s);

describe('raw payload view', () => {
  it('shows UTF-8 text as text', () => {
    expect(rawSegments(utf8('{"a":"é ✓ 𝄞"}\n'))).toEqual([{ text: '{"a":"é ✓ 𝄞"}\n' }]);
  });

  it('shows bytes that are not UTF-8 as escapes, keeping the text around them', () => {
    expect(rawSegments(bytes(0x61, 0xff, 0xfe, 0x62))).toEqual([
      { text: 'a' },
      { esc: '\\xFF\\xFE' },
      { text: 'b' },
    ]);
  });

  it('escapes truncated and overlong sequences and surrogates byte by byte', () => {
    expect(rawSegments(bytes(0xe2, 0x9c))).toEqual([{ esc: '\\xE2\\x9C' }]);
    expect(rawSegments(bytes(0xc0, 0xaf))).toEqual([{ esc: '\\xC0\\xAF' }]);
    expect(rawSegments(bytes(0xed, 0xa0, 0x80))).toEqual([{ esc: '\\xED\\xA0\\x80' }]);
  });

  it('escapes control bytes but keeps tabs and line breaks', () => {
    expect(rawSegments(bytes(0x09, 0x00, 0x0a, 0x1b, 0x0d))).toEqual([
      { text: '\t' },
      { esc: '\\x00' },
      { text: '\n' },
      { esc: '\\x1B' },
      { text: '\r' },
    ]);
  });

  it('makes bidi controls visible', () => {
    expect(rawSegments(utf8('a\u202Eb'))).toEqual([{ text: 'a' }, { esc: '\\u{202E}' }, { text: 'b' }]);
  });

  it('keeps markup as text: the template escapes it', () => {
    expect(rawSegments(utf8('<script>alert(1)</script>'))).toEqual([{ text: '<script>alert(1)</script>' }]);
  });
});

describe('pretty views', () => {
  it('pretty-prints JSON and tokenizes it back to the same text', () => {
    const pretty = prettyJson(utf8('{"a":[1,true,null,"x"],"b":{"c":-2.5e3}}'));
    expect(pretty).toBe(JSON.stringify({ a: [1, true, null, 'x'], b: { c: -2.5e3 } }, null, 2));
    const tokens = jsonTokens(pretty!);
    expect(tokens?.map((t) => t.v).join('')).toBe(pretty);
    expect(tokens?.find((t) => t.v === '"a"')?.t).toBe('key');
    expect(tokens?.find((t) => t.v === '"x"')?.t).toBe('str');
    expect(tokens?.find((t) => t.v === 'true')?.t).toBe('lit');
  });

  it('tokenizes strings holding quotes, colons and backslashes', () => {
    const pretty = prettyJson(utf8('{"k\\"e:y":"v\\\\\\"a: l"}'))!;
    expect(
      jsonTokens(pretty)
        ?.map((t) => t.v)
        .join(''),
    ).toBe(pretty);
  });

  it('has no pretty view for text that is not JSON or not UTF-8', () => {
    expect(prettyJson(utf8('a=1&b=2'))).toBeNull();
    expect(prettyJson(bytes(0x7b, 0xff, 0x7d))).toBeNull();
    expect(prettyJson(utf8('   '))).toBeNull();
  });

  it('lists form fields of a form-encoded body', () => {
    expect(formFields(utf8('a=1&b=%3Cx%3E&a=2'), 'application/x-www-form-urlencoded; charset=utf-8')).toEqual(
      [
        ['a', '1'],
        ['b', '<x>'],
        ['a', '2'],
      ],
    );
    expect(formFields(utf8('a=1'), 'application/json')).toBeNull();
  });
});

describe('formatting', () => {
  it('formats sizes', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(5 * 1024 * 1024)).toBe('5.0 MiB');
  });

  it('formats times in UTC', () => {
    expect(formatDateTime('2026-01-02T03:04:05.678Z')).toBe('2026-01-02 03:04:05 UTC');
    expect(formatDateTime(null)).toBe('');
    expect(formatDateTime('not a date')).toBe('');
  });
});
