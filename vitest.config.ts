import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// Three tiers, named by file suffix (style.md §11). `npm test` runs all of them: unit and int
// side by side, at least two files at once, then e2e, its files one at a time. vitest's
// default (one file fewer than the cores) would run one at a time on a 2-core machine, where an
// int file spends about as long loading its modules as running its tests. Each int worker slot has
// its own embedded PostgreSQL (test/support/embedded-setup.ts); tests on the shared server make
// databases of their own.
const sideBySide = Math.max(2, availableParallelism() - 1);
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.unit.test.ts', 'rules-sandbox/**/*.unit.test.ts'],
          maxWorkers: sideBySide,
        },
      },
      {
        extends: true,
        test: {
          name: 'int',
          include: ['test/**/*.int.test.ts'],
          pool: 'forks',
          maxWorkers: sideBySide,
          globalSetup: ['test/support/embedded-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/**/*.e2e.test.ts'],
          pool: 'forks',
          fileParallelism: false,
          globalSetup: ['test/support/embedded-setup.ts'],
        },
      },
    ],
  },
});
