import { defineConfig } from 'vitest/config';

// Three tiers, named by file suffix (style.md §11). `npm test` runs all of them.
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/**/*.unit.test.ts', 'rules-sandbox/**/*.unit.test.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'int',
          include: ['test/**/*.int.test.ts'],
          pool: 'forks',
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
