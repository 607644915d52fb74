/**
 * The flags Node runs hookline with: the `hookline` binary's shebang, `npm start` and the
 * Dockerfile's entrypoint carry them, and so do the benchmarks, for their servers and for the
 * hookline code they run in their own process (test/cli/node-flags.unit.test.ts keeps them in step).
 *
 * `--max-semi-space-size=8`: V8 sizes the young generation from the machine's memory; on a machine
 * with 24 GB it let it grow to 134 MB under webhook load, garbage that the process held as RSS
 * (bench:ingest on PostgreSQL peaked at 326 MB). Measured side by side, five runs each: 16 MB
 * semi-spaces peaked at 246 to 254 MB (median 6,882 req/s), 8 MB at 236 to 240 MB (median 6,704
 * req/s); the design's bound is 250 MB.
 */
export const NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8'];
