import { describe, expect, it } from 'vitest';
import {
  formFields,
  jsonTokens,
  PRETTY_MAX_DEPTH,
  prettyJson,
  rawSegments,
} from '../../../src/http/ui/payload-view.ts';
import { formatBytes, formatDateTime } from '../../../src/http/ui/views.ts';

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
    expect(pretty).toBe(
      '{\n  "a": [\n    1,\n    true,\n    null,\n    "x"\n  ],\n  "b": {\n    "c": -2.5e3\n  }\n}',
    );
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

  it('lays JSON out as JSON.stringify(value, null, 2) does', () => {
    for (const text of [
      '{"a":[1,true,null,"x"],"b":{"c":-2500,"d":[],"e":{}},"f":[[],[{}]]}',
      ' \n[ 1 ,\t2 ]\r\n',
      '"just a string"',
      '0',
      '[]',
      '{ }',
    ]) {
      expect(prettyJson(utf8(text)), text).toBe(JSON.stringify(JSON.parse(text), null, 2));
    }
  });

  it('keeps numbers exactly as received: big integers, trailing zeros, exponents', () => {
    const pretty = prettyJson(utf8('{"id":12345678901234567890123,"price":1.50,"tiny":1E-400,"neg":-0}'))!;
    expect(pretty).toBe(
      '{\n  "id": 12345678901234567890123,\n  "price": 1.50,\n  "tiny": 1E-400,\n  "neg": -0\n}',
    );
    expect(JSON.stringify(JSON.parse('12345678901234567890123'))).not.toBe('12345678901234567890123');
  });

  it('keeps duplicate keys, in order', () => {
    expect(prettyJson(utf8('{"a":1,"a":{"b":2,"b":3}}'))).toBe(
      '{\n  "a": 1,\n  "a": {\n    "b": 2,\n    "b": 3\n  }\n}',
    );
  });

  it('keeps escapes as they were written, unicode escapes and lone surrogates included', () => {
    const text = '["\\u00e9\\ud83d\\ude00","\\ud800","\\/\\n\\"","é"]';
    expect(prettyJson(utf8(text))).toBe(
      '[\n  "\\u00e9\\ud83d\\ude00",\n  "\\ud800",\n  "\\/\\n\\"",\n  "é"\n]',
    );
    const tokens = jsonTokens(prettyJson(utf8(text))!);
    expect(tokens?.filter((t) => t.t === 'str').map((t) => t.v)).toEqual([
      '"\\u00e9\\ud83d\\ude00"',
      '"\\ud800"',
      '"\\/\\n\\""',
      '"é"',
    ]);
  });

  it('has no pretty view for text that is not one JSON value, so the raw view stands alone', () => {
    for (const text of [
      '{"a":1,}',
      '[1,]',
      '[1 2]',
      '{"a" 1}',
      '{"a":}',
      '{1:2}',
      "{'a':1}",
      '01',
      '1.',
      '.5',
      '+1',
      'NaN',
      'tru',
      '"\\x"',
      '"\\u12"',
      '"unterminated',
      '"tab\tinside"',
      '{} x',
      '{}}',
      '[}',
      '{"a":1',
      '[',
    ]) {
      expect(prettyJson(utf8(text)), text).toBeNull();
    }
  });

  it('has no pretty view past its depth or size limits', () => {
    const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    expect(prettyJson(utf8(deep(PRETTY_MAX_DEPTH)))).not.toBeNull();
    expect(prettyJson(utf8(deep(PRETTY_MAX_DEPTH + 1)))).toBeNull();
    // Small tokens nested deep: the indentation would be many times the payload.
    const wide = `${'['.repeat(100)}${Array.from({ length: 60_000 }, () => '1').join(',')}${']'.repeat(100)}`;
    expect(prettyJson(utf8(wide))).toBeNull();
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
