/**
 * The flags Node runs hookline with: the `hookline` binary's shebang, `npm start` and the
 * Dockerfile's entrypoint carry them (test/cli/node-flags.unit.test.ts keeps the four in step), and
 * the benchmarks start their servers with them.
 *
 * `--max-semi-space-size=16`: V8 sizes the young generation from the machine's memory; on a machine
 * with 24 GB it let it grow to 134 MB under webhook load, garbage that the process held as RSS
 * (peak 326 MB in bench:ingest on PostgreSQL). Capped at 16 MB semi-spaces the peak was 252 to 264
 * MB at the same throughput (8 MB saved another 10 MB but made the rate unsteady).
 */
export const NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16'];
