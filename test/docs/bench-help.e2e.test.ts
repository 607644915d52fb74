import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

/** package.json's `bench:<name>` scripts, each with the file it runs. */
const scripts = Object.entries(
  (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
    .scripts,
)
  .filter(([name]) => name.startsWith('bench:'))
  .map(([name, command]) => {
    const file = command.split(/\s+/).find((t) => /^bench\/[\w-]+\.ts$/.test(t));
    if (!file) throw new Error(`${name} runs no bench/*.ts file: ${command}`);
    return { name, file };
  });

/** Every option the docs show on a command line of a benchmark, by script. */
function documentedOptions(): Map<string, Set<string>> {
  const byScript = new Map<string, Set<string>>();
  const mention = /(?:npm run (bench:[\w-]+)(?: --)?|node (bench\/[\w-]+\.ts))([^`\n|#]*)/g;
  for (const doc of ['README.md', 'bench/README.md', 'docs/architecture.md']) {
    const text = readFileSync(path.join(ROOT, doc), 'utf8');
    for (const m of text.matchAll(mention)) {
      const script = m[1] ?? scripts.find((s) => s.file === m[2])?.name;
      if (!script) continue; // a helper such as bench/profile-summary.ts
      const options = byScript.get(script) ?? new Set<string>();
      for (const token of m[3]!.split(/\s+/)) {
        const t = token.replace(/^\[+/, '');
        if (!t.startsWith('--') || t === '--') continue;
        options.add(
          t
            .slice(2)
            .split('=')[0]!
            .replace(/[\]),.;:]+$/, ''),
        );
      }
      byScript.set(script, options);
    }
  }
  return byScript;
}

describe('the benchmarks answer --help with what they take', () => {
  it('finds the benchmarks', () => {
    expect(scripts.map((s) => s.name)).toEqual(
      expect.arrayContaining(['bench:ingest', 'bench:store', 'bench:screens']),
    );
  });

  const documented = documentedOptions();
  for (const { name, file } of scripts) {
    it(`${name}: --help lists every option the docs show for it; an unknown option exits 2`, async () => {
      const { stdout } = await run(process.execPath, [file, '--help'], { cwd: ROOT });
      expect(stdout.startsWith(`Usage: npm run ${name} -- [options]\n`)).toBe(true);
      const listed = new Set([...stdout.matchAll(/^ {2}(?:-h, )?--([\w-]+)/gm)].map((m) => m[1]!));
      expect(listed.has('help')).toBe(true);
      const missing = [...(documented.get(name) ?? [])].filter((o) => !listed.has(o));
      expect(missing, `${name}: options in the docs that --help does not list`).toEqual([]);

      const refused = await run(process.execPath, [file, '--no-such-option'], { cwd: ROOT }).then(
        () => undefined,
        (err: { code?: number; stderr?: string }) => err,
      );
      expect(refused?.code).toBe(2);
      expect(refused?.stderr).toMatch(/Unknown option '--no-such-option'[\s\S]*Usage: npm run /);
    });
  }
});
