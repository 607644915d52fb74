import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { postDelivery, startHookline } from '../server/harness.ts';
import { freshDataDir, removeDataDir } from '../support/embedded.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';

const hasPg = await postgresAvailable();
const BIN = path.resolve(import.meta.dirname, '../../bin/hookline.mjs');
const run = promisify(execFile);

async function hookline(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOOKLINE_LOG_LEVEL: 'warn', ...env },
      timeout: 180_000,
      maxBuffer: 256 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/**
 * `hookline export` / `hookline import`, the real binary: embedded → server → embedded, each
 * export byte-identical to the first, and the read models rebuilt from the imported log.
 */
describe.runIf(hasPg)('hookline export | import between modes', () => {
  const dirs: string[] = [];
  let db: TestDatabase | undefined;
  afterAll(async () => {
    for (const d of dirs) await removeDataDir(d);
    await db?.drop();
  });

  it('round-trips the whole log byte for byte and rebuilds the read models', async () => {
    const source = await freshDataDir();
    dirs.push(source);
    const server = await startHookline(source);
    await server.healthy();
    const acked: number[] = [];
    for (let i = 0; i < 30; i++) {
      const { status, ack } = await postDelivery(server.url, JSON.stringify({ i, note: 'ü ✓ '.repeat(i) }));
      expect(status).toBe(202);
      acked.push(ack.id);
    }
    server.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);

    const file = path.join(source, 'export.ndjson');
    const exported = await hookline(['export', '--output', file], { HOOKLINE_DATA_DIR: source });
    expect(exported.code, exported.stderr).toBe(0);
    const first = await readFile(file);
    const lines = first.toString('utf8').trim().split('\n');
    expect(JSON.parse(lines[0]!)).toEqual({ format: 'hookline-event-log', version: 1 });
    const deliveries = lines
      .slice(1)
      .map(
        (l) =>
          JSON.parse(l) as {
            stream_id: string;
            revision: number;
            event_id: string;
            created_at: string;
            unique_key?: string;
          },
      )
      .filter((e) => e.stream_id === 'deliveries');
    expect(deliveries.map((e) => e.revision + 1)).toEqual(acked);
    // Each delivery's dedup key goes with it (the imports below keep it: their exports are identical).
    expect(deliveries.every((e) => /^dedup-codehost-[0-9a-f]{64}$/.test(e.unique_key ?? ''))).toBe(true);
    expect(deliveries.every((e) => /^[0-9a-f-]{36}$/.test(e.event_id) && e.created_at.endsWith('Z'))).toBe(
      true,
    );

    // Into a fresh PostgreSQL database (server mode).
    db = await createTestDatabase('hookline_import');
    const imported = await hookline(['import', file], { DATABASE_URL: db.url });
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stderr).toContain(`imported ${lines.length - 1} events`);
    const again = await hookline(['export'], { DATABASE_URL: db.url });
    expect(again.code, again.stderr).toBe(0);
    expect(Buffer.from(again.stdout, 'utf8').equals(first)).toBe(true);

    // The read models were rebuilt from the imported log: the log screen's table holds every delivery.
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const { rows } = await client.query<{ n: string }>('select count(*)::text as n from log_events');
    await client.end();
    expect(Number(rows[0]!.n)).toBe(acked.length);

    // A store that already holds events is refused, and left as it was.
    const twice = await hookline(['import', file], { DATABASE_URL: db.url });
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain('not empty');

    // And back into a new embedded data directory.
    const target = await freshDataDir();
    dirs.push(target);
    const secondFile = path.join(target, 'from-server.ndjson');
    await writeFile(secondFile, again.stdout);
    const back = await hookline(['import', secondFile], { HOOKLINE_DATA_DIR: target });
    expect(back.code, back.stderr).toBe(0);
    const third = await hookline(['export'], { HOOKLINE_DATA_DIR: target });
    expect(Buffer.from(third.stdout, 'utf8').equals(first)).toBe(true);
  }, 600_000);

  it('refuses input that is not an export, with the line at fault', async () => {
    const target = await freshDataDir();
    dirs.push(target);
    const bad = path.join(target, 'bad.ndjson');
    await writeFile(bad, '{"format":"hookline-event-log","version":1}\n{"stream_id":"x"}\n');
    const result = await hookline(['import', bad], { HOOKLINE_DATA_DIR: target });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('line 2 is not an event of a hookline export');
  }, 240_000);
});
