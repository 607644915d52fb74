/**
 * Filler for the benchmarks' payloads: prose as a provider's events carry it (commit messages,
 * a path, an issue number, a URL), never one long run of a letter. The log's search vector parses
 * every word of a payload, and PostgreSQL parses this prose at about four times the cost of one
 * 1,082-letter word of `x` (bench/README.md, issue 20, "Words no `q` can match, parsed short"): a
 * filler of one letter made every delivery look cheaper than a real one.
 */
export const PROSE =
  'Retry the webhook sender with backoff when the receiver answers 503, and log the attempt ' +
  'before the next one (fixes #4127, see src/sender/retry.ts and ' +
  'https://github.com/baxterthehacker/public-repo/pull/4128 for the trace). Merge branch ' +
  "'release-2.14' of github.com:baxterthehacker/public-repo into main; update README.md. ";

/** `length` characters of PROSE, repeated as needed (ASCII, so as many bytes). */
export function prose(length: number): string {
  return PROSE.repeat(Math.ceil(length / PROSE.length)).slice(0, Math.max(0, length));
}
