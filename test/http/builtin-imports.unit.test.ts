import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(ts|mts|js|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts'))
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)));
}

/** An `import` that brings values (not only types) from node:http or node:https. */
const valueImport = /^import\s+(?!type\b)[^;]*?\bfrom\s+['"](node:)?https?['"]/m;

describe('start-up: node:http and node:https', () => {
  it('are never imported as ES modules for their values (that loads undici at every start)', () => {
    const offenders = ['bin', 'src', 'projections', 'rules-sandbox']
      .flatMap(sources)
      .filter((file) => valueImport.test(readFileSync(path.join(root, file), 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('the check finds such an import', () => {
    expect("import { STATUS_CODES } from 'node:http';").toMatch(valueImport);
    expect("import https from 'node:https';").toMatch(valueImport);
    expect("import type { IncomingMessage } from 'node:http';").not.toMatch(valueImport);
  });
});
