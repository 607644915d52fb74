import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { clientAndTestVariables, envSchema } from '../../src/config.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** The configuration reference holds both tables (the README links to it). */
const DOC = 'docs/reference/configuration.md';
const readme = readFileSync(path.join(root, DOC), 'utf8');

/** The variable names of the table that starts at `heading` (its rows up to the first blank line). */
function tableRows(heading: string): Set<string> {
  const at = readme.indexOf(heading);
  expect(at, `${DOC} has a line ${JSON.stringify(heading)}`).toBeGreaterThanOrEqual(0);
  const table = readme.slice(at + heading.length).split('\n\n')[0] ?? '';
  return new Set([...table.matchAll(/^\| `([A-Za-z0-9_]+)` \|/gm)].map((m) => m[1] ?? ''));
}

/** Every `HOOKLINE_*` name read from the environment by the files under `dir` (recursively). */
function envReadsUnder(dir: string): Set<string> {
  const names = new Set<string>();
  for (const entry of readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const text = readFileSync(path.join(entry.parentPath, entry.name), 'utf8');
    for (const m of text.matchAll(/\benv\.(HOOKLINE_[A-Z0-9_]+)/g)) names.add(m[1] ?? '');
  }
  return names;
}

/** The configuration reference must name every variable hookline reads (issue 2, point 2). */
describe('configuration reference: the variables table', () => {
  const rows = tableRows('| variable | default | meaning |\n|---|---|---|\n');

  it('has a row for every variable of src/config.ts', () => {
    const missing = Object.keys(envSchema.shape).filter((name) => !rows.has(name));
    expect(missing, `add these to the Configuration table of ${DOC}`).toEqual([]);
  });

  it('has no row for a variable the schema does not read', () => {
    const stale = [...rows].filter((name) => !(name in envSchema.shape));
    expect(stale).toEqual([]);
  });
});

describe('configuration reference: CLI and test variables', () => {
  const rows = tableRows('| variable | read by | meaning |\n|---|---|---|\n');

  it('names every variable the CLI and the tests read outside the schema', () => {
    const read = new Set([
      ...envReadsUnder('src/cli'),
      ...envReadsUnder('test'),
      'HOOKLINE_URL',
      'HOOKLINE_SERVER',
    ]);
    const missing = [...read].filter((name) => !(name in envSchema.shape) && !rows.has(name));
    expect(missing, `add these to the CLI and test variables table of ${DOC}`).toEqual([]);
  });

  it('has no row for a variable of the schema', () => {
    expect([...rows].filter((name) => name in envSchema.shape)).toEqual([]);
  });

  it('is the list the unknown-variable warning knows (src/config.ts clientAndTestVariables)', () => {
    const documented = [...rows].filter((name) => name.startsWith('HOOKLINE_')).sort();
    expect(documented).toEqual([...clientAndTestVariables].sort());
  });
});
