import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { errorCatalog } from '../../src/errors.ts';

const doc = readFileSync(fileURLToPath(new URL('../../docs/reference/problems.md', import.meta.url)), 'utf8');

/** The rows `| status | `code` | title |` of the problem-code table. */
const rows = [...doc.matchAll(/^\| (\d{3}) \| `([a-z_]+)` \| ([^|]+) \|$/gm)].map((m) => ({
  code: m[2] ?? '',
  status: Number(m[1]),
  title: (m[3] ?? '').trim(),
}));

describe('docs/reference/problems.md: the problem codes', () => {
  it('lists every code of the error catalogue with its status and title, and nothing else', () => {
    const catalogue = Object.entries(errorCatalog).map(([code, { status, title }]) => ({
      code,
      status,
      title,
    }));
    const byCode = (a: { code: string }, b: { code: string }) => a.code.localeCompare(b.code);
    expect([...rows].sort(byCode)).toEqual([...catalogue].sort(byCode));
  });
});
