import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { envSchema } from '../../src/config.ts';

/** The README's configuration table must name every variable the schema reads (issue 2, point 2). */
describe('README configuration table', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(
    readme.indexOf('## Configuration'),
    readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1),
  );
  const rows = new Set([...section.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1] ?? ''));

  it('has a row for every variable of src/config.ts', () => {
    const missing = Object.keys(envSchema.shape).filter((name) => !rows.has(name));
    expect(missing, 'add these to the Configuration table of README.md').toEqual([]);
  });

  it('has no row for a variable the schema does not read', () => {
    const stale = [...rows].filter((name) => !(name in envSchema.shape));
    expect(stale).toEqual([]);
  });
});
