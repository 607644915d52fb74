import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Every decider and every read model has a spec of its own (style.md §2 and §15): a decider is
 * used by some test through `deciderSpec(<name>…)` (test/support/decider-spec.ts), a projection
 * through `projectionSpec(<name>)` (test/support/projection-spec.ts). A new one without such a test
 * fails here, by name.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));

/** The .ts files under `dir` (from the repository root), with their text. */
function sources(dir: string): { file: string; text: string }[] {
  return readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => {
      const file = path.relative(root, path.join(e.parentPath, e.name)).split(path.sep).join('/');
      return { file, text: readFileSync(path.join(root, file), 'utf8') };
    });
}

const exported = (text: string, suffix: string): string[] =>
  [...text.matchAll(new RegExp(`^export (?:const|function) (\\w+${suffix})\\b`, 'gm'))].map((m) => m[1]!);

const tests = sources('test').filter((s) => s.file.endsWith('.test.ts'));
/** The names `helper(` is called with, across every test file. */
function specified(helper: string): Set<string> {
  const names = new Set<string>();
  for (const { text } of tests) {
    for (const m of text.matchAll(new RegExp(`\\b${helper}\\(\\s*(\\w+)`, 'g'))) names.add(m[1]!);
  }
  return names;
}

describe('every decider and every read model has a spec test', () => {
  it('each exported *Decider of src/domain is given, when, then in some deciderSpec', () => {
    const deciders = sources('src/domain').flatMap(({ file, text }) =>
      exported(text, 'Decider').map((name) => `${file}: ${name}`),
    );
    // The scan itself works: the deciders the domain had when this test was written are found.
    expect(deciders).toEqual(
      expect.arrayContaining([
        'src/domain/todo/decide.ts: todoDecider',
        'src/domain/friend/decide.ts: friendDecider',
      ]),
    );
    const withSpec = specified('deciderSpec');
    expect(deciders.filter((d) => !withSpec.has(d.split(': ')[1]!))).toEqual([]);
  });

  it('each projections/*.projection.ts is given events, then rows, in some projectionSpec', () => {
    const files = sources('projections').filter(({ file }) =>
      /^projections\/[^/]+\.projection\.ts$/.test(file),
    );
    expect(files.length).toBeGreaterThanOrEqual(11);
    const projections = files.map(({ file, text }) => {
      const names = exported(text, 'Projection');
      expect(names, `${file} exports one projection`).toHaveLength(1);
      return `${file}: ${names[0]}`;
    });
    const withSpec = specified('projectionSpec');
    expect(projections.filter((p) => !withSpec.has(p.split(': ')[1]!))).toEqual([]);
  });
});
