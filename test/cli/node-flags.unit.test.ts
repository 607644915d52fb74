import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NODE_FLAGS } from '../../src/cli/node-flags.ts';

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

describe('the Node flags hookline runs with', () => {
  it('are in the binary shebang, npm start, the Docker entrypoint and the in-process benchmarks', () => {
    const shebang = read('bin/hookline.mjs').split('\n')[0];
    expect(shebang).toBe(`#!/usr/bin/env -S node ${NODE_FLAGS.join(' ')}`);
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toBe(`node ${NODE_FLAGS.join(' ')} bin/hookline.mjs serve`);
    // Benchmarks that run hookline's code in their own process run it as the server does.
    for (const bench of ['store', 'rebuild']) {
      expect(pkg.scripts[`bench:${bench}`]).toBe(`node ${NODE_FLAGS.join(' ')} bench/${bench}.ts`);
    }
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(read('Dockerfile'))?.[1];
    expect(JSON.parse(entrypoint ?? '[]')).toEqual(['node', ...NODE_FLAGS, 'bin/hookline.mjs']);
  });
});
