import { CompiledQuery, type Kysely } from 'kysely';
import pg from 'pg';
import { from as copyFromStdin, to as copyToStdout } from 'pg-copy-streams';

/**
 * Bulk loading with `COPY ... FROM STDIN (FORMAT binary)` through Kysely,
 * and bulk reading with `COPY (query) TO STDOUT (FORMAT binary)`.
 *
 * An INSERT from unnested arrays makes PostgreSQL parse every array in text form and materialize
 * the rows before inserting them. For the log read model (about 2 KB a row, most of it the payload)
 * that cost about twice the server time of COPY, and five times when the table has no index.
 * COPY in binary format takes each value as it is stored.
 *
 * Reading, the text protocol sends a bytea as hex or (encoded in the query) base64: the server
 * spends about 7 µs a 1.5 KB row on it, and the client as long again decoding it. Binary COPY sends
 * the bytes as they are.
 *
 * Kysely knows nothing of COPY, so a statement runs as a query whose only parameter is a
 * CopyInput (its data) or COPY_OUT (asking for the output): the pool's clients (CopyingClient)
 * run it with pg-copy-streams, on the connection, and in the transaction, of the Kysely handle it
 * is given. COPY takes no parameters: a statement carries its values written out.
 */

/** The data of one COPY, as the only parameter of its statement. */
export class CopyInput {
  readonly data: Buffer;
  constructor(data: Buffer) {
    this.data = data;
  }
}

/** The only parameter of a `COPY ... TO STDOUT` statement: its output comes back as one Buffer. */
export const COPY_OUT: unique symbol = Symbol('COPY_OUT');

/** The column types the encoder writes, by their PostgreSQL names. */
export type CopyType = 'int8' | 'int4' | 'bool' | 'text' | 'uuid' | 'jsonb' | 'bytea' | 'timestamptz';

/** A value of a row: null for SQL NULL; a `timestamptz` takes a Date or epoch milliseconds. */
export type CopyValue = string | number | bigint | boolean | Date | Uint8Array | null;

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
/** 2000-01-01T00:00:00Z, PostgreSQL's epoch for timestamps, in Unix milliseconds. */
const PG_EPOCH_MS = 946_684_800_000;
const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/**
 * The buffer every encoding writes into, kept between encodings: an encoding runs start to end
 * without yielding (encodeBinaryCopy is synchronous), so one process-wide buffer serves all.
 * Each encoding then allocates its output once, at its exact size. A fresh 64 KB buffer grown by
 * doubling for each statement had made the projections' COPY about a fifth of hookline's
 * ArrayBuffer allocation under webhook load, garbage that waits for a full collection
 * (bench/README.md, "Memory at the ingest peak"). Grown past SCRATCH_KEPT by a large batch, it
 * is dropped after that encoding.
 */
const SCRATCH_KEPT = 1024 * 1024;
const SCRATCH_START = 64 * 1024;
let scratch: Buffer | undefined = Buffer.allocUnsafeSlow(SCRATCH_START);

/** The scratch buffer, taken (an encoding nested in another, or one after a throw, gets its own). */
function takeScratch(): Buffer {
  const taken = scratch ?? Buffer.allocUnsafeSlow(SCRATCH_START);
  scratch = undefined;
  return taken;
}

/** Writes rows in PostgreSQL's binary COPY format into the shared scratch buffer. */
class BinaryWriter {
  private buf = takeScratch();
  private at = 0;

  private room(bytes: number): void {
    if (this.at + bytes <= this.buf.length) return;
    const next = Buffer.allocUnsafeSlow(Math.max(this.buf.length * 2, this.at + bytes));
    this.buf.copy(next, 0, 0, this.at);
    this.buf = next;
  }

  raw(bytes: Uint8Array): void {
    this.room(bytes.byteLength);
    this.buf.set(bytes, this.at);
    this.at += bytes.byteLength;
  }

  int16(v: number): void {
    this.room(2);
    this.at = this.buf.writeInt16BE(v, this.at);
  }

  int32(v: number): void {
    this.room(4);
    this.at = this.buf.writeInt32BE(v, this.at);
  }

  /** A field of fixed size: its length, then what `write` puts at the offset it is given. */
  fixed(size: number, write: (buf: Buffer, at: number) => void): void {
    this.room(4 + size);
    this.at = this.buf.writeInt32BE(size, this.at);
    write(this.buf, this.at);
    this.at += size;
  }

  /** A field holding a string's UTF-8 bytes, after `prefix` (jsonb's version byte). */
  string(s: string, prefix?: number): void {
    const lead = prefix === undefined ? 0 : 1;
    this.room(4 + lead + s.length * 3);
    const start = this.at + 4;
    if (prefix !== undefined) this.buf[start] = prefix;
    const n = this.buf.write(s, start + lead, 'utf8');
    this.buf.writeInt32BE(lead + n, this.at);
    this.at = start + lead + n;
  }

  bytes(b: Uint8Array): void {
    this.int32(b.byteLength);
    this.raw(b);
  }

  /** A copy of what was written, at its exact size; the scratch buffer is free again. */
  done(): Buffer {
    const out = Buffer.from(this.buf.subarray(0, this.at));
    scratch = this.buf.length <= SCRATCH_KEPT ? this.buf : Buffer.allocUnsafeSlow(SCRATCH_START);
    return out;
  }
}

function fail(column: string, type: CopyType, value: unknown): never {
  throw new TypeError(`column ${column} (${type}) cannot take ${typeof value} ${String(value).slice(0, 40)}`);
}

function writeValue(w: BinaryWriter, column: string, type: CopyType, v: CopyValue): void {
  if (v === null) {
    w.int32(-1);
    return;
  }
  switch (type) {
    case 'int8': {
      if (typeof v !== 'bigint' && typeof v !== 'number' && typeof v !== 'string') fail(column, type, v);
      const n = BigInt(v);
      w.fixed(8, (b, at) => b.writeBigInt64BE(n, at));
      return;
    }
    case 'int4':
      if (typeof v !== 'number' || !Number.isInteger(v)) fail(column, type, v);
      w.fixed(4, (b, at) => b.writeInt32BE(v, at));
      return;
    case 'bool':
      if (typeof v !== 'boolean') fail(column, type, v);
      w.fixed(1, (b, at) => {
        b[at] = v ? 1 : 0;
      });
      return;
    case 'text':
      if (typeof v !== 'string') fail(column, type, v);
      w.string(v);
      return;
    case 'jsonb':
      if (typeof v !== 'string') fail(column, type, v);
      w.string(v, 1); // binary jsonb: format version 1, then the JSON text
      return;
    case 'uuid':
      if (typeof v !== 'string' || !UUID.test(v)) fail(column, type, v);
      w.fixed(16, (b, at) => b.write(v.replaceAll('-', ''), at, 'hex'));
      return;
    case 'bytea':
      if (!(v instanceof Uint8Array)) fail(column, type, v);
      w.bytes(v);
      return;
    case 'timestamptz': {
      const ms = v instanceof Date ? v.getTime() : v;
      if (typeof ms !== 'number' || !Number.isFinite(ms)) fail(column, type, v);
      // Microseconds since PostgreSQL's epoch; our times have millisecond precision.
      const micros = BigInt(Math.round(ms) - PG_EPOCH_MS) * 1000n;
      w.fixed(8, (b, at) => b.writeBigInt64BE(micros, at));
      return;
    }
    default: {
      const never: never = type;
      throw new TypeError(`unknown COPY type ${String(never)}`);
    }
  }
}

/** A table's COPY: which columns, of which types, in which order. */
export interface CopySpec {
  readonly table: string;
  readonly columns: readonly (readonly [name: string, type: CopyType])[];
}

/** The rows in PostgreSQL's binary COPY format; each row holds one value per column of the spec. */
export function encodeBinaryCopy(spec: CopySpec, rows: Iterable<readonly CopyValue[]>): Buffer {
  const w = new BinaryWriter();
  w.raw(SIGNATURE);
  w.int32(0); // flags
  w.int32(0); // header extension length
  const width = spec.columns.length;
  for (const row of rows) {
    if (row.length !== width)
      throw new TypeError(`a row of ${spec.table} has ${row.length} values, not ${width}`);
    w.int16(width);
    for (let c = 0; c < width; c++) writeValue(w, spec.columns[c]![0], spec.columns[c]![1], row[c]!);
  }
  w.int16(-1);
  return w.done();
}

/**
 * Copies the rows into the spec's table on the connection of `db` (inside its transaction, if it
 * is one). The table name is left unqualified: the session's search_path chooses the schema (a
 * rebuild's shadow).
 */
export async function copyRows(
  // biome-ignore lint/suspicious/noExplicitAny: works on any schema; the spec names the table
  db: Kysely<any>,
  spec: CopySpec,
  rows: Iterable<readonly CopyValue[]>,
): Promise<void> {
  const columns = spec.columns.map(([name]) => name).join(', ');
  const statement = `copy ${spec.table} (${columns}) from stdin (format binary)`;
  await db.executeQuery(CompiledQuery.raw(statement, [new CopyInput(encodeBinaryCopy(spec, rows))]));
}

/**
 * Runs a `COPY (query) TO STDOUT (format binary)` statement and returns its output whole, for
 * decodeBinaryCopy. Values must be written into the statement: COPY takes no parameters.
 */
export async function copyOut(
  // biome-ignore lint/suspicious/noExplicitAny: as copyRows
  db: Kysely<any>,
  statement: string,
): Promise<Buffer> {
  const result = await db.executeQuery<{ data: Buffer }>(CompiledQuery.raw(statement, [COPY_OUT]));
  const data = result.rows[0]?.data;
  if (!data) throw new Error('COPY TO returned no output');
  return data;
}

/** One tuple of binary COPY output: each field's bytes (a view into the output), or null. */
export type CopiedRow = readonly (Buffer | null)[];

/** The tuples of a binary COPY output (signature, header, tuples, trailer). */
export function decodeBinaryCopy(out: Buffer): CopiedRow[] {
  if (out.length < 19 || !out.subarray(0, 11).equals(SIGNATURE)) throw new Error('not a binary COPY output');
  let at = 11 + 4;
  const take = (bytes: number): number => {
    if (at + bytes > out.length) throw new Error('the binary COPY output ends early');
    const start = at;
    at += bytes;
    return start;
  };
  take(out.readInt32BE(take(4))); // header extension
  const rows: CopiedRow[] = [];
  for (;;) {
    const fields = out.readInt16BE(take(2));
    if (fields === -1) return rows;
    const row = new Array<Buffer | null>(fields);
    for (let f = 0; f < fields; f++) {
      const length = out.readInt32BE(take(4));
      if (length < 0) {
        row[f] = null;
        continue;
      }
      const start = take(length);
      row[f] = out.subarray(start, start + length);
    }
    rows.push(row);
  }
}

/** A binary timestamptz (microseconds since 2000-01-01 UTC) as a Date, to the millisecond. */
export const timestampFromBinary = (field: Buffer): Date =>
  new Date(Number(field.readBigInt64BE(0) / 1000n) + PG_EPOCH_MS);

type CopyCall = { readonly direction: 'in'; readonly data: Buffer } | { readonly direction: 'out' };

function copyCall(text: unknown, values: unknown): CopyCall | undefined {
  if (typeof text !== 'string' || !Array.isArray(values) || values.length !== 1) return undefined;
  if (values[0] instanceof CopyInput) return { direction: 'in', data: values[0].data };
  if (values[0] === COPY_OUT) return { direction: 'out' };
  return undefined;
}

/**
 * The pool's client class (pg.Pool's `Client` option): a query whose only parameter is a
 * CopyInput or COPY_OUT runs as COPY with pg-copy-streams; every other query is pg's own.
 */
export class CopyingClient extends pg.Client {
  // biome-ignore lint/suspicious/noExplicitAny: pg's query() has many overloads; all but two pass through unchanged
  override query(...args: any[]): any {
    const [text, values] = args;
    const call = copyCall(text, values);
    if (!call) return (super.query as (...a: unknown[]) => unknown)(...args);
    if (call.direction === 'in') {
      const stream = super.query(copyFromStdin(text));
      return new Promise((resolve, reject) => {
        stream.on('error', reject);
        // 'finish' follows the server's CommandComplete, which carries the row count.
        stream.on('finish', () => resolve({ command: 'COPY', rowCount: stream.rowCount, rows: [] }));
        stream.end(call.data);
      });
    }
    const stream = super.query(copyToStdout(text));
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', reject);
      stream.on('end', () => {
        // pg hands every query it runs a callback to call when done; pg-copy-streams' COPY TO never
        // calls it. Until it is called, the pool's read timeout (query_timeout, db/open.ts) stays
        // armed, holding the stream and its page for 5 s (measured: 160 MB more RSS under webhook
        // load), and then fires an error at a finished query.
        (stream as { callback?: (err?: Error) => void }).callback?.();
        // Each chunk is a buffer of its own (pg-copy-streams copies it out of the socket's): a
        // page that came in one chunk is used as it is, not copied once more.
        const data = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        resolve({ command: 'COPY', rowCount: stream.rowCount, rows: [{ data }] });
      });
    });
  }
}
