/**
 * URLs as they may appear in a log line or anywhere stored: ingest tokens removed from the
 * per-webhook path (`/webhooks/w/<token>`), the generic path token
 * (`/webhooks/generic/<name>/<token>`) and any `token=` query value (design.md, "Browser safety").
 * Use it in the request-log serializer.
 */
export const REDACTED_MARK = '«redacted»';

export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  let path = q < 0 ? url : url.slice(0, q);
  let query = q < 0 ? '' : url.slice(q);
  path = path
    .replace(/^(\/webhooks\/generic\/[^/?#]+\/)[^/?#]+/, `$1${REDACTED_MARK}`)
    .replace(/^(\/webhooks\/w\/)[^/?#]+/, `$1${REDACTED_MARK}`);
  if (query) query = query.replace(/([?&;]token=)[^&;#]*/gi, `$1${REDACTED_MARK}`);
  return path + query;
}
