/**
 * How the detail screen shows a payload: the bytes exactly as received, with whatever would not
 * read as text made visible instead of dropped. Everything here is data for the template, which
 * escapes it; nothing is ever marked safe.
 */
export type RawSegment = { readonly text: string } | { readonly esc: string };

const hex = (b: number) => `\\x${b.toString(16).padStart(2, '0').toUpperCase()}`;

/** Code points shown escaped although valid: bidi controls can make text read differently. */
const invisible = (cp: number) =>
  (cp >= 0x80 && cp <= 0x9f) ||
  (cp >= 0x202a && cp <= 0x202e) ||
  (cp >= 0x2066 && cp <= 0x2069) ||
  cp === 0x200e ||
  cp === 0x200f ||
  cp === 0x2028 ||
  cp === 0x2029 ||
  cp === 0xfeff;

/** Length of the well-formed UTF-8 sequence at `i` (Unicode table 3-7), 0 when ill-formed. */
function sequenceLength(bytes: Uint8Array, i: number): number {
  const b0 = bytes[i]!;
  if (b0 < 0x80) return 1;
  let n: number;
  let lo = 0x80;
  let hi = 0xbf;
  if (b0 >= 0xc2 && b0 <= 0xdf) n = 2;
  else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    if (b0 === 0xe0) lo = 0xa0;
    if (b0 === 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    if (b0 === 0xf0) lo = 0x90;
    if (b0 === 0xf4) hi = 0x8f;
  } else return 0;
  if (i + n > bytes.length) return 0;
  const b1 = bytes[i + 1]!;
  if (b1 < lo || b1 > hi) return 0;
  for (let k = 2; k < n; k++) {
    const b = bytes[i + k]!;
    if (b < 0x80 || b > 0xbf) return 0;
  }
  return n;
}

/** The bytes as text; ill-formed UTF-8 and control bytes become `\xNN` segments, marked apart. */
export function rawSegments(bytes: Uint8Array): RawSegment[] {
  const out: RawSegment[] = [];
  let text = '';
  const markEscaped = (label: string) => {
    if (text) out.push({ text });
    text = '';
    const last = out[out.length - 1];
    if (last && 'esc' in last) out[out.length - 1] = { esc: last.esc + label };
    else out.push({ esc: label });
  };
  const decoder = new TextDecoder();
  let i = 0;
  while (i < bytes.length) {
    const n = sequenceLength(bytes, i);
    if (n === 0) {
      markEscaped(hex(bytes[i]!));
      i++;
      continue;
    }
    if (n === 1) {
      const b = bytes[i]!;
      if ((b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) || b === 0x7f) markEscaped(hex(b));
      else text += String.fromCharCode(b);
    } else {
      const s = decoder.decode(bytes.subarray(i, i + n));
      const cp = s.codePointAt(0)!;
      if (invisible(cp)) markEscaped(`\\u{${cp.toString(16).toUpperCase()}}`);
      else text += s;
    }
    i += n;
  }
  if (text) out.push({ text });
  return out;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function asText(bytes: Uint8Array): string | null {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return null;
  }
}

/**
 * Pretty-printed JSON when the bytes are UTF-8 JSON, else null (the page then shows the raw view
 * alone, which stays the truth either way).
 */
export function prettyJson(bytes: Uint8Array): string | null {
  const text = asText(bytes);
  if (text === null || text.trim() === '') return null;
  return reindentJson(text);
}

/** Past this depth or output size there is no pretty view: its indentation would outgrow the payload. */
export const PRETTY_MAX_DEPTH = 128;
export const PRETTY_MAX_CHARS = 8 * 1024 * 1024;

/** One JSON token (RFC 8259; a string holds no raw control character), or a run of JSON white space. */
const jsonLexeme =
  /[ \t\n\r]+|"(?:[\u0020\u0021\u0023-\u005B\u005D-\u{10FFFF}]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null|[{}[\],:]/uy;

/**
 * The text re-indented as JSON.stringify(value, null, 2) lays it out, but token by token: every
 * string, key and number is written exactly as received, so a big integer keeps its digits, a
 * duplicate key stays (JSON.parse keeps only the last), `\u00e9` stays an escape and `1.50` keeps
 * its zero. Null when the text is not one JSON value (the grammar is checked as it goes), or when
 * it is nested or grows past the limits above.
 */
export function reindentJson(text: string): string | null {
  const out: string[] = [];
  let size = 0;
  const emit = (s: string): void => {
    out.push(s);
    size += s.length;
  };
  const newline = (depth: number): void => emit(`\n${'  '.repeat(depth)}`);
  const stack: { readonly kind: '{' | '['; members: number }[] = [];
  // value: a value comes next (at the top, after `:`, after `[` or `,` in an array); key: a key
  // (after `{` or `,` in an object); after: `,` or the close of the container; end: nothing more.
  let state: 'value' | 'key' | 'colon' | 'after' | 'end' = 'value';
  jsonLexeme.lastIndex = 0;
  while (jsonLexeme.lastIndex < text.length) {
    const match = jsonLexeme.exec(text);
    if (match === null) return null;
    const token = match[0];
    const c = token[0]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') continue;
    const top = stack.at(-1);
    if (c === '}' || c === ']') {
      if (top?.kind !== (c === '}' ? '{' : '[')) return null;
      const empty = top.members === 0 && state === (c === '}' ? 'key' : 'value');
      if (!empty && state !== 'after') return null;
      stack.pop();
      if (!empty) newline(stack.length);
      emit(c);
      state = stack.length > 0 ? 'after' : 'end';
    } else if (c === ',') {
      if (state !== 'after') return null;
      emit(',');
      state = top!.kind === '{' ? 'key' : 'value';
    } else if (c === ':') {
      if (state !== 'colon') return null;
      emit(': ');
      state = 'value';
    } else if (state === 'key') {
      if (c !== '"') return null;
      top!.members++;
      newline(stack.length);
      emit(token);
      state = 'colon';
    } else if (state === 'value') {
      if (top?.kind === '[') {
        top.members++;
        newline(stack.length);
      }
      if (c === '{' || c === '[') {
        if (stack.length >= PRETTY_MAX_DEPTH) return null;
        stack.push({ kind: c, members: 0 });
        emit(c);
        state = c === '{' ? 'key' : 'value';
      } else {
        emit(token);
        state = stack.length > 0 ? 'after' : 'end';
      }
    } else return null;
    if (size > PRETTY_MAX_CHARS) return null;
  }
  return state === 'end' ? out.join('') : null;
}

/** The fields of a form-encoded body, in order, else null. */
export function formFields(bytes: Uint8Array, contentType: string | null): [string, string][] | null {
  if (!contentType || !/^application\/x-www-form-urlencoded\b/i.test(contentType)) return null;
  const text = asText(bytes);
  if (text === null) return null;
  return [...new URLSearchParams(text).entries()];
}

export interface JsonToken {
  /** key, str, num, lit (true/false/null), punct or ws: a CSS class suffix. */
  readonly t: 'key' | 'str' | 'num' | 'lit' | 'punct' | 'ws';
  readonly v: string;
}

/** Above this size the pretty view is shown without colouring (one span a token adds up). */
export const HIGHLIGHT_LIMIT = 256 * 1024;

const tokenPattern =
  /("(?:\\.|[^"\\])*")(\s*:)?|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|(true|false|null)|([{}[\],:])|(\s+)/gy;

/** Tokens of the pretty JSON for colouring; null when too large. Concatenated, they are `pretty`. */
export function jsonTokens(pretty: string): JsonToken[] | null {
  if (pretty.length > HIGHLIGHT_LIMIT) return null;
  const out: JsonToken[] = [];
  tokenPattern.lastIndex = 0;
  let m: RegExpExecArray | null = tokenPattern.exec(pretty);
  while (m !== null) {
    if (m[1] !== undefined) {
      out.push({ t: m[2] !== undefined ? 'key' : 'str', v: m[1] });
      if (m[2] !== undefined) out.push({ t: 'punct', v: m[2] });
    } else if (m[3] !== undefined) out.push({ t: 'num', v: m[3] });
    else if (m[4] !== undefined) out.push({ t: 'lit', v: m[4] });
    else if (m[5] !== undefined) out.push({ t: 'punct', v: m[5] });
    else out.push({ t: 'ws', v: m[6]! });
    if (tokenPattern.lastIndex === pretty.length) return out;
    m = tokenPattern.exec(pretty);
  }
  return null; // not JSON as JSON.stringify writes it: show it uncoloured
}
