import { fileURLToPath } from 'node:url';
import nunjucks from 'nunjucks';
import { type Assets, assetUrl } from './assets.ts';

export const templatesDir = fileURLToPath(new URL('../../../templates/', import.meta.url));

export interface Views {
  render(name: string, context?: Record<string, unknown>): string;
}

const trustLabels: Record<string, string> = {
  signed: 'Signed',
  token: 'Token',
  open: 'Open · unchecked',
  queue: 'Broker',
  operator: 'Operator',
};

/** 1536 → "1.5 KiB"; exact bytes go in a title attribute next to it. */
export function formatBytes(n: unknown): string {
  const v = typeof n === 'number' ? n : Number(n);
  if (!Number.isFinite(v)) return '';
  if (v < 1024) return `${v} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let x = v / 1024;
  let i = 0;
  while (x >= 1024 && i < units.length - 1) {
    x /= 1024;
    i++;
  }
  return `${x < 10 ? x.toFixed(1) : Math.round(x)} ${units[i]}`;
}

/** "2025-01-31 14:05:09 UTC": the page's script rewrites it in the reader's local time. */
export function formatDateTime(value: unknown): string {
  if (value === null || value === undefined || value === '') return '';
  const d = value instanceof Date ? value : new Date(String(value));
  if (Number.isNaN(d.getTime())) return '';
  return `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

export const isoString = (value: unknown): string => {
  if (value === null || value === undefined || value === '') return '';
  const d = value instanceof Date ? value : new Date(String(value));
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
};

/**
 * The Nunjucks environment. Autoescape is on: every value rendered with `{{ }}` is HTML-escaped,
 * and no template marks user data `| safe` (payloads and headers are attacker-controlled).
 */
export function createViews(options: {
  assets: Assets;
  version: string;
  dir?: string;
  noCache?: boolean;
}): Views {
  const env = new nunjucks.Environment(
    new nunjucks.FileSystemLoader(options.dir ?? templatesDir, { noCache: options.noCache ?? false }),
    { autoescape: true, throwOnUndefined: false, trimBlocks: true, lstripBlocks: true },
  );
  env.addGlobal('asset', (name: string) => assetUrl(options.assets, name));
  env.addGlobal('version', options.version);
  env.addFilter('bytes', formatBytes);
  env.addFilter('datetime', formatDateTime);
  env.addFilter('iso', isoString);
  env.addFilter('trust_label', (mode: unknown) => trustLabels[String(mode)] ?? String(mode));
  // Provider names carry `:`; a path segment needs the whole name percent-encoded.
  env.addFilter('path_segment', (v: unknown) => encodeURIComponent(String(v)));
  env.addFilter('number', (v: unknown) =>
    typeof v === 'number' ? v.toLocaleString('en-US') : String(v ?? ''),
  );
  return {
    render: (name, context = {}) => env.render(name, context),
  };
}
