import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CopySpec,
  type CopyValue,
  copyOut,
  copyRows,
  decodeBinaryCopy,
  encodeBinaryCopy,
  timestampFromBinary,
} from '../../src/db/copy.ts';
import { openPostgres, type SqlDatabase } from '../../src/db/open.ts';
import { openEmbeddedTarget } from '../support/embedded.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';

const hasPg = await postgresAvailable();

const SPEC: CopySpec = {
  table: 'copied',
  columns: [
    ['id', 'int8'],
    ['uuid', 'uuid'],
    ['label', 'text'],
    ['flag', 'bool'],
    ['doc', 'jsonb'],
    ['bytes', 'bytea'],
    ['n', 'int4'],
    ['at', 'timestamptz'],
  ],
};

const CREATE = sql`create table copied (
  id bigint primary key, uuid uuid, label text, flag boolean, doc jsonb, bytes bytea, n int, at timestamptz)`;

// biome-ignore lint/suspicious/noExplicitAny: a table of this test only
type AnyDb = Kysely<any>;

interface Row {
  id: bigint;
  uuid: string | null;
  label: string | null;
  flag: boolean | null;
  doc: unknown;
  bytes: Uint8Array | null;
  n: number | null;
  at: Date | null;
}

async function rows(db: AnyDb, table = 'copied'): Promise<Row[]> {
  const r = await sql<Row>`select * from ${sql.table(table)} order by id`.execute(db);
  return r.rows.map((x) => ({ ...x, id: BigInt(x.id), bytes: x.bytes && Buffer.from(x.bytes) }));
}

function suite(open: () => Promise<SqlDatabase>) {
  let handle: SqlDatabase;
  let db: AnyDb;

  beforeAll(async () => {
    handle = await open();
    db = handle.db as AnyDb;
    await CREATE.execute(db);
  });

  afterAll(async () => {
    await handle?.close();
  });

  it('loads every type byte for byte, nulls included', async () => {
    const uuid = randomUUID();
    const notUtf8 = Buffer.from([0x00, 0xff, 0xfe, 0xc3, 0x28, 0x0a]);
    const input: CopyValue[][] = [
      [1n, uuid, 'plain', true, '{"a":[1,2,{"b":null}]}', notUtf8, 42, Date.UTC(2026, 10, 23, 12, 0, 0, 123)],
      [2, null, null, null, null, null, null, null],
      [
        '-9007199254740993',
        uuid.replaceAll('-', ''),
        'ünïcødé ✓ 𝄞 and a "quote"\n',
        false,
        '{"ключ":"значение","emoji":"🦊"}',
        new Uint8Array(0),
        -2147483648,
        new Date('1999-12-31T23:59:59.999Z'),
      ],
    ];
    await copyRows(db, SPEC, input);
    const got = await rows(db);
    expect(got).toHaveLength(3);
    expect(got[0]).toEqual({
      id: -9007199254740993n,
      uuid,
      label: 'ünïcødé ✓ 𝄞 and a "quote"\n',
      flag: false,
      doc: { ключ: 'значение', emoji: '🦊' },
      bytes: Buffer.alloc(0),
      n: -2147483648,
      at: new Date('1999-12-31T23:59:59.999Z'),
    });
    expect(got[1]).toEqual({
      id: 1n,
      uuid,
      label: 'plain',
      flag: true,
      doc: { a: [1, 2, { b: null }] },
      bytes: notUtf8,
      n: 42,
      at: new Date(Date.UTC(2026, 10, 23, 12, 0, 0, 123)),
    });
    expect(got[2]).toEqual({
      id: 2n,
      uuid: null,
      label: null,
      flag: null,
      doc: null,
      bytes: null,
      n: null,
      at: null,
    });
  });

  it('reads a query back as binary COPY output, fields as they are stored', async () => {
    const out = await copyOut(
      db,
      'copy (select id, label, bytes, at, n from copied where id in (1, 2) order by id) to stdout (format binary)',
    );
    const [first, second, ...rest] = decodeBinaryCopy(out);
    expect(rest).toEqual([]);
    expect(first![0]!.readBigInt64BE(0)).toBe(1n);
    expect(first![1]!.toString('utf8')).toBe('plain');
    expect(first![2]).toEqual(Buffer.from([0x00, 0xff, 0xfe, 0xc3, 0x28, 0x0a]));
    expect(timestampFromBinary(first![3]!)).toEqual(new Date(Date.UTC(2026, 10, 23, 12, 0, 0, 123)));
    expect(first![4]!.readInt32BE(0)).toBe(42);
    expect(second).toEqual([Buffer.from([0, 0, 0, 0, 0, 0, 0, 2]), null, null, null, null]);
    const none = await copyOut(db, 'copy (select id from copied where false) to stdout (format binary)');
    expect(decodeBinaryCopy(none)).toEqual([]);
  });

  it('runs in the transaction it is given: a rollback leaves nothing', async () => {
    await expect(
      db.transaction().execute(async (trx) => {
        await copyRows(trx, SPEC, [[100n, null, 'rolled back', null, null, null, null, null]]);
        const inside = await sql<{ n: number }>`select count(*)::int as n from copied where id = 100`.execute(
          trx,
        );
        expect(inside.rows[0]!.n).toBe(1);
        throw new Error('undo');
      }),
    ).rejects.toThrow('undo');
    const after = await sql<{ n: number }>`select count(*)::int as n from copied where id = 100`.execute(db);
    expect(after.rows[0]!.n).toBe(0);
  });

  it("follows the session's search_path, as a rebuild's shadow schema needs", async () => {
    await sql`create schema copy_shadow`.execute(db);
    await sql`create table copy_shadow.copied (like public.copied)`.execute(db);
    await db.transaction().execute(async (trx) => {
      await sql`set local search_path to copy_shadow`.execute(trx);
      await copyRows(trx, SPEC, [[7n, null, 'in the shadow', null, null, null, null, null]]);
    });
    expect((await rows(db, 'copy_shadow.copied')).map((r) => r.label)).toEqual(['in the shadow']);
    expect((await rows(db)).some((r) => r.label === 'in the shadow')).toBe(false);
  });

  it("fails with the server's error on a conflict, and the database goes on serving", async () => {
    await expect(
      copyRows(db, SPEC, [[1n, null, 'duplicate key', null, null, null, null, null]]),
    ).rejects.toThrow(/duplicate key|unique/i);
    await copyRows(db, SPEC, [[3n, null, 'after the error', null, null, null, null, null]]);
    expect((await rows(db)).map((r) => r.label)).toContain('after the error');
  });
}

describe('binary COPY in embedded mode', () => {
  suite(() => openEmbeddedTarget());
});

describe.runIf(hasPg)('binary COPY on PostgreSQL', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('hookline_copy');
  });
  afterAll(async () => {
    await database?.drop();
  });
  suite(async () => openPostgres(database.url, { max: 2 }));

  it('leaves no read timeout armed once a COPY TO has ended', async () => {
    // pg arms the pool's query_timeout for every query and disarms it through the query's callback,
    // which pg-copy-streams' COPY TO never calls: a finished read held its page until it fired.
    const handle = openPostgres(database.url, { max: 1, queryTimeoutMs: 60_000 });
    const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    try {
      await copyOut(handle.db, 'copy (select 1) to stdout (format binary)'); // connects
      const before = timeouts();
      for (let i = 0; i < 20; i++) await copyOut(handle.db, 'copy (select 1) to stdout (format binary)');
      // Armed timeouts would be 20 more. The process's other timers come and go meanwhile (an
      // earlier suite's server and pools shutting down), so the count is not expected to stay exact.
      expect(timeouts() - before).toBeLessThan(5);
    } finally {
      await handle.close();
    }
  });
});

describe('the binary COPY encoder', () => {
  it('refuses a row of the wrong width or a value of the wrong type before anything is sent', () => {
    expect(() => encodeBinaryCopy(SPEC, [[1n]])).toThrow(/has 1 values, not 8/);
    const row = (n: CopyValue): CopyValue[] => [1n, null, null, null, null, null, n, null];
    expect(() => encodeBinaryCopy(SPEC, [row(1.5)])).toThrow(/column n \(int4\)/);
    expect(() => encodeBinaryCopy(SPEC, [[1n, 'not-a-uuid', null, null, null, null, null, null]])).toThrow(
      /column uuid \(uuid\)/,
    );
    expect(() => encodeBinaryCopy(SPEC, [[1n, null, null, null, null, null, null, Number.NaN]])).toThrow(
      /column at \(timestamptz\)/,
    );
  });

  it('refuses output that is not binary COPY, or that ends early wherever it is cut', () => {
    expect(() => decodeBinaryCopy(Buffer.from('id\tlabel\n1\tplain\n'))).toThrow(/not a binary COPY/);
    const one = encodeBinaryCopy(SPEC, [[1n, null, 'cut short', null, null, null, null, null]]);
    expect(decodeBinaryCopy(one)).toHaveLength(1);
    for (let cut = 19; cut < one.length; cut++) {
      expect(() => decodeBinaryCopy(one.subarray(0, cut))).toThrow(/ends early/);
    }
  });

  it('gives each encoding a buffer of its own, at its exact size, after larger, smaller and failed ones', () => {
    const row = (id: bigint, label: string): CopyValue[] => [id, null, label, null, null, null, null, null];
    const big = encodeBinaryCopy(
      SPEC,
      Array.from({ length: 3000 }, (_, i) => row(BigInt(i), `label ${i} ${'x'.repeat(600)}`)),
    );
    expect(big.length).toBeGreaterThan(1024 * 1024); // past what the encoder keeps between encodings
    const small = encodeBinaryCopy(SPEC, [row(7n, 'seven')]);
    const copyOfSmall = Buffer.from(small);
    expect(() => encodeBinaryCopy(SPEC, [row(1n, 'fine'), [1n]])).toThrow(/has 1 values/);
    const again = encodeBinaryCopy(SPEC, [row(8n, 'eight, longer than seven')]);
    expect(small.equals(copyOfSmall)).toBe(true); // not overwritten by the encodings after it
    expect(decodeBinaryCopy(small)).toHaveLength(1);
    expect(decodeBinaryCopy(again)).toHaveLength(1);
    expect(decodeBinaryCopy(big)).toHaveLength(3000);
    expect(decodeBinaryCopy(big)[2999]![2]!.toString()).toBe(`label 2999 ${'x'.repeat(600)}`);
  });

  it('writes the signature, a header without flags, and the trailer', () => {
    const empty = encodeBinaryCopy(SPEC, []);
    expect(empty.subarray(0, 11).toString('latin1')).toBe('PGCOPY\n\xff\r\n\0');
    expect(empty.length).toBe(11 + 8 + 2);
    expect(empty.readInt16BE(19)).toBe(-1);
  });
});
