import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Q_MAX, searchableText } from '../../projections/log.table.ts';
import { PG_ADMIN_URL, postgresAvailable } from '../support/services.ts';

/**
 * searchableText replaces words no `q` can match before PostgreSQL parses them. Whatever the text
 * around them, the vector it gives must equal the original's once the lexemes longer than Q_MAX
 * (which no query of at most Q_MAX characters holds) are left out of both: same lexemes, same
 * positions, so every search finds the same rows. PostgreSQL's own parser is the oracle here.
 */

// Pieces a payload may hold around a long word: JSON, markup, entities, numbers with exponents,
// addresses, paths, hyphens, escapes, non-ASCII letters.
const AROUND = [
  '"',
  '":"',
  '","',
  '\\"',
  ' ',
  '<a href="',
  '">',
  '<!-- "',
  '" -->',
  '&',
  '&#x',
  ';',
  '1.5e',
  '1e',
  '42',
  '-',
  '_',
  '.',
  '/',
  '@example.com',
  'ada@',
  'http://example.com/',
  'https://',
  '://',
  'é',
  'Ünïcode',
  "'",
  ':',
  'word',
  'public-repo',
  'v1.2.3',
  '\n',
];

/** Deterministic (a failure can be replayed): mulberry32. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function longWord(next: () => number): string {
  const lengths = [Q_MAX - 1, Q_MAX, Q_MAX + 1, Q_MAX + 2, 700, 1082, 2045, 2046, 2047, 3000];
  const length = lengths[Math.floor(next() * lengths.length)]!;
  const first = ['x', 'e', 'E', 'h', 'X', 'z'][Math.floor(next() * 6)]!;
  const rest = next() < 0.5 ? 'x' : 'aBcDeF';
  return (first + rest.repeat(length)).slice(0, length);
}

function texts(count: number): string[] {
  const next = random(20261130);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    let text = '';
    const parts = 2 + Math.floor(next() * 10);
    for (let p = 0; p < parts; p++) {
      const piece = AROUND[Math.floor(next() * AROUND.length)]!;
      // Often a word between quotes, the case that is replaced, after any piece.
      text += next() < 0.3 ? `${piece}${next() < 0.7 ? `"${longWord(next)}"` : longWord(next)}` : piece;
    }
    out.push(text);
  }
  return out;
}

describe.runIf(await postgresAvailable())('the search vector without unsearchable words', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: PG_ADMIN_URL });
    client.on('notice', () => {}); // "word is too long to be indexed", for words of 2,047 letters and more
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
  });

  /** Both texts' vectors as the log's trigger makes them, each without its lexemes longer than Q_MAX. */
  async function vectors(originals: readonly string[]): Promise<{ original: string; searched: string }[]> {
    const { rows } = await client.query<{ original: string; searched: string }>(
      `with v as (
         select i,
                to_tsvector('simple'::regconfig, 'push ' || a) as original,
                to_tsvector('simple'::regconfig, 'push ' || b) as searched
         from unnest($1::text[], $2::text[]) with ordinality as u(a, b, i)
       )
       select ts_delete(original, array(select l from unnest(tsvector_to_array(original)) l
                                        where char_length(l) > $3))::text as original,
              ts_delete(searched, array(select l from unnest(tsvector_to_array(searched)) l
                                        where char_length(l) > $3))::text as searched
       from v order by i`,
      [originals, originals.map(searchableText), Q_MAX],
    );
    return rows;
  }

  it('leaves a text without such a word as it is', () => {
    const text = `{"a":"${'x'.repeat(Q_MAX)}","b":"x${'1'.repeat(500)}"}`;
    expect(searchableText(text)).toBe(text);
  });

  it('gives the same lexemes at the same positions as the text itself, whatever surrounds the word', async () => {
    const all = texts(600);
    const replaced = all.filter((t) => searchableText(t) !== t);
    // The cases that matter are there: at least a fifth of the texts have a word replaced.
    expect(replaced.length).toBeGreaterThan(all.length / 5);
    const rows = await vectors(all);
    const differing = rows.flatMap((r, i) => (r.original === r.searched ? [] : [{ text: all[i], ...r }]));
    expect(differing).toEqual([]);
  });

  it('a payload padded with one long word: the phrase across it and the words after it are found as before', async () => {
    const payload = `{"message":"ship it","padding":"${'x'.repeat(1082)}","after":"done"}`;
    expect(searchableText(payload)).not.toContain('x'.repeat(Q_MAX + 1));
    const [row] = await vectors([payload]);
    expect(row!.searched).toBe(row!.original);
    expect(row!.original).toContain("'done':");
  });
});
